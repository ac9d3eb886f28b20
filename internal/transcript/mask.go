package transcript

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// Masked replaces a secret in a transcript.
const Masked = "[masked]"

// minSecret is the shortest environment value treated as a secret: shorter
// values ("1", "true") would mask ordinary text everywhere.
const minSecret = 8

// secretNameParts mark an environment variable as secret when its name
// contains one of them, in any case.
var secretNameParts = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE"}

// secretFlagWords mark a command-line flag or a name=value element as secret
// when its name, split at '-', '_' and '.', has one of them as a word. Whole
// words, so that --max-tokens or --keep are not masked.
var secretFlagWords = []string{
	"key", "apikey", "token", "secret", "password", "passwd", "pass",
	"credential", "credentials", "auth", "authorization", "bearer", "cookie",
}

// tokenPattern matches the shapes of well-known API keys and access tokens
// (OpenAI/Anthropic "sk-", GitHub, Google "AIza", Slack, AWS access key ids,
// Hugging Face).
var tokenPattern = regexp.MustCompile(`\b(sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|AIza[0-9A-Za-z_-]{30,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|hf_[A-Za-z0-9]{20,})`)

// Masker hides secrets. Built by NewMasker from an environment, it knows the
// values of the variables whose names look secret (ANTHROPIC_API_KEY,
// GITHUB_TOKEN, DB_PASSWORD…: names containing KEY, TOKEN, SECRET,
// PASSWORD, PASSWD, CREDENTIAL or PRIVATE) and at least 8 bytes long, and
// not a plain number. A nil or zero Masker knows no values but still
// applies the argv rules. A Masker is safe for concurrent use.
type Masker struct {
	text *strings.Replacer // secret values -> Masked
	json *strings.Replacer // JSON-escaped secret values -> Masked
}

// NewMasker returns a Masker for the secret-looking variables of environ,
// given as "NAME=value" strings like os.Environ.
func NewMasker(environ []string) *Masker {
	var vals []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !secretName(name) || !secretValue(val) {
			continue
		}
		vals = append(vals, val)
	}
	m := &Masker{}
	if len(vals) == 0 {
		return m
	}
	// Longest first, so a secret that contains another is masked whole.
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	vals = slices.Compact(vals)
	var text, js []string
	for _, v := range vals {
		text = append(text, v, Masked)
		js = append(js, jsonEscape(v), Masked)
	}
	m.text = strings.NewReplacer(text...)
	m.json = strings.NewReplacer(js...)
	return m
}

func secretName(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range secretNameParts {
		if strings.Contains(up, p) {
			return true
		}
	}
	return false
}

// secretValue reports whether val can be masked safely wherever it appears:
// long enough, and not something that could be a JSON number or literal.
func secretValue(val string) bool {
	if len(val) < minSecret {
		return false
	}
	return strings.Trim(val, "0123456789+-.eE") != ""
}

// jsonEscape returns s as it appears inside a JSON string written without
// HTML escaping.
func jsonEscape(s string) string {
	out, _ := marshalNoEscape(s) // a string always encodes
	return string(out[1 : len(out)-1])
}

// Text returns s with every known secret value replaced by Masked.
func (m *Masker) Text(s string) string {
	if m == nil || m.text == nil {
		return s
	}
	return m.text.Replace(s)
}

// maskJSON returns the encoded payload data with every known secret value
// replaced inside its strings. Secret values cannot be JSON numbers or
// literals (see secretValue), so they match only inside strings; should a
// match still break the JSON (a secret with backslashes matching across
// two escapes), the data is decoded, masked string by string, and encoded
// again.
func (m *Masker) maskJSON(data []byte) []byte {
	if m == nil || m.json == nil {
		return data
	}
	s := string(data)
	r := m.json.Replace(s)
	if r == s {
		return data
	}
	if json.Valid([]byte(r)) {
		return []byte(r)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return []byte(r) // not JSON to begin with
	}
	out, err := marshalNoEscape(m.maskValue(v))
	if err != nil {
		return []byte(r)
	}
	return out
}

// maskValue masks every string in a decoded JSON value, keys included.
func (m *Masker) maskValue(v any) any {
	switch x := v.(type) {
	case string:
		return m.Text(x)
	case []any:
		for i := range x {
			x[i] = m.maskValue(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[m.Text(k)] = m.maskValue(e)
		}
		return out
	}
	return v
}

// Argv returns a copy of argv with secrets masked:
//
//   - known secret values anywhere (see Text);
//   - the value of a secret-looking flag, "--api-key=V" or "--token V";
//   - the value of a secret-looking "NAME=V" element (an environment
//     assignment, or a setting such as codex's -c provider.api_key=V);
//   - the value of an "Authorization: …" header element;
//   - strings shaped like well-known API keys (sk-…, ghp_…, AIza…).
//
// A flag's name is secret-looking when one of its words (split at '-', '_'
// and '.') is key, apikey, token, secret, password, passwd, pass,
// credential(s), auth, authorization, bearer or cookie.
func (m *Masker) Argv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	maskNext := false
	for i, a := range argv {
		switch {
		case maskNext:
			out[i] = Masked
			maskNext = false
			continue
		case strings.HasPrefix(a, "-") && len(a) > 1:
			name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if secretWords(name) {
				if hasVal {
					out[i] = a[:strings.IndexByte(a, '=')+1] + Masked
				} else {
					out[i] = a
					maskNext = true
				}
				continue
			}
		case isAssignment(a):
			name, _, _ := strings.Cut(a, "=")
			if secretWords(name) || secretName(name) && !strings.Contains(name, ".") {
				out[i] = name + "=" + Masked
				continue
			}
		case len(a) > 14 && strings.EqualFold(a[:14], "authorization:"):
			out[i] = a[:14] + " " + Masked
			continue
		}
		out[i] = tokenPattern.ReplaceAllString(m.Text(a), Masked)
	}
	return out
}

// assignment matches a "NAME=value" argv element.
var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*=`)

func isAssignment(a string) bool { return assignment.MatchString(a) }

// secretWords reports whether a flag or setting name has a secret word.
func secretWords(name string) bool {
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return r == '-' || r == '_' || r == '.'
	}) {
		if slices.Contains(secretFlagWords, w) {
			return true
		}
	}
	return false
}
