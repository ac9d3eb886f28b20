package frontmatter

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Values are written as YAML on one line, so that an edit replaces one
// line's worth of bytes and a value can never swallow the lines after it:
// a string is plain when that is unambiguous, else single-quoted, else
// double-quoted with escapes; a list is a flow sequence of such strings.

var errNotUTF8 = errors.New("not valid UTF-8")

// quote returns s as a YAML scalar that decodes back to exactly the string s.
func quote(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", errNotUTF8
	}
	if plain(s) {
		return s, nil
	}
	if strings.IndexFunc(s, func(r rune) bool { return !printable(r) }) < 0 {
		return "'" + strings.ReplaceAll(s, "'", "''") + "'", nil
	}
	return doubleQuote(s), nil
}

// plain reports whether s can be written without quotes and read back as
// the same string by YAML 1.1 and 1.2 readers alike: letters, digits and
// "-_./" only, starting with a letter or digit, not a word some reader
// takes for a boolean or null, and resolved by yaml.v3 as a string (so
// not a number or a date).
func plain(s string) bool {
	if s == "" || !isAlnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' && c != '/' {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	n, err := decodeValue(s)
	return err == nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value == s
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// printable reports whether r may appear as itself inside single quotes.
func printable(r rune) bool {
	return r == ' ' || unicode.IsPrint(r) && r != '\uFEFF'
}

// doubleQuote returns s double-quoted, escaping everything not printable.
func doubleQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case printable(r):
			b.WriteRune(r)
		case r <= 0xFF:
			fmt.Fprintf(&b, `\x%02X`, r)
		case r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			fmt.Fprintf(&b, `\U%08X`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quoteList returns items as a YAML flow sequence on one line.
func quoteList(items []string) (string, error) {
	var b strings.Builder
	b.WriteByte('[')
	for i, it := range items {
		q, err := quote(it)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(q)
	}
	b.WriteByte(']')
	return b.String(), nil
}

// render returns v, a value given to MergeFields for a key that is not
// knotd's, as YAML on one line.
func render(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return quote(v)
	case Mode:
		return quote(string(v))
	case []string:
		return quoteList(v)
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	}
	return "", fmt.Errorf("unsupported value type %T; want string, []string, bool, int or nil", v)
}

// decodeValue decodes one YAML value written on its own.
func decodeValue(text string) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("%q is not one YAML value", text)
	}
	return doc.Content[0], nil
}
