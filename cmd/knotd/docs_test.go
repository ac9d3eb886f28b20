package main

import (
	"encoding"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// The documentation (README.md and docs/*.md) names knotd's commands, flags
// and configuration keys by these conventions, which the tests below hold
// it to in both directions:
//
//   - A knotd command line is a code span, or a line of a fenced block that
//     is not yaml, ini or xml, that begins with "knotd " (or "$ knotd ").
//     Its first word, if it is a lowercase word, is a command of knotd
//     --help; a second lowercase word is one of that command's own
//     commands, where it has any (runs show, service install). Every flag
//     in the line (up to a comment or a gap of two spaces) is one of that
//     command's --help, or of knotd --help when there is no command.
//   - A code span that begins with a flag ("--debounce DUR", "-f") names
//     a flag of knotd or of one of its commands, unless foreignFlags lists
//     it as another program's.
//   - A configuration key is named as a key of a ```yaml block: the
//     block's keys are paths ("limits.content", an agent's "agents.*.model",
//     a rule's "rules[].path"), and every one must be a key the loader
//     accepts.
//   - A frontmatter key is a row of the table of a "## Frontmatter"
//     section (| `knot_mode` | …), and one knotd reads.
//
// And the reverse: every command and flag of knotd's --help is named in
// the documentation, and so is every key the loader accepts and every
// frontmatter key knotd reads.

// foreignFlags are flags the documentation names that belong to other
// programs, with the program.
var foreignFlags = map[string]string{
	"--append-system-prompt":         "claude",
	"--cid":                          "llm",
	"--continue":                     "claude",
	"--dangerously-skip-permissions": "claude",
	"--max-budget-usd":               "claude",
	"--resume":                       "claude",
	"--session-id":                   "claude",
	"--setting-sources":              "claude",
	"-c":                             "codex",
	"-s":                             "codex",
	"-quick":                         "go run ./bench",
	"-clis":                          "go run ./bench",
	"-turns":                         "go run ./bench",
	"-race":                          "go test",
}

// misspeltCommands are commands the documentation names as examples of a
// typo knotd corrects; TestDocs_NameWhatExists checks that knotd refuses
// each.
var misspeltCommands = []string{"staus"}

// doc is one documentation file.
type doc struct{ name, text string }

// readDocs returns README.md and docs/*.md.
func readDocs(t *testing.T) []doc {
	t.Helper()
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var docs []doc
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, f)
		require.NoError(t, err)
		docs = append(docs, doc{filepath.ToSlash(rel), string(b)})
	}
	require.Greater(t, len(docs), 5, "README.md and docs/*.md")
	return docs
}

// knotdFacts is what knotd's --help and its configuration loader say
// exists.
type knotdFacts struct {
	commands map[string]bool            // "runs", "status", "help", …
	subs     map[string]map[string]bool // "runs" → {"show"}
	flags    map[string]map[string]bool // command ("" for knotd) → its flags
	keys     map[string]bool            // "limits.content", "agents.*.model", …
	fmKeys   map[string]bool            // knot_session, … (package frontmatter)
	accepts  func(key string) bool      // the loader accepts key
}

// allFlags returns every flag of knotd and its commands.
func (f *knotdFacts) allFlags() map[string]bool {
	all := map[string]bool{}
	for _, fl := range f.flags {
		for name := range fl {
			all[name] = true
		}
	}
	return all
}

var (
	helpFlag  = regexp.MustCompile(`(?m)^  (-{1,2}[a-z][a-z-]*)`)
	usageCmd  = regexp.MustCompile(`(?m)^(?:usage:)?\s+knotd ([a-z]+)`)
	quotedCmd = regexp.MustCompile(`'knotd ([a-z]+)`)
)

// helpFacts reads knotd's commands and flags from its --help, and the
// configuration keys from the loader.
func helpFacts(t *testing.T) *knotdFacts {
	t.Helper()
	f := &knotdFacts{commands: map[string]bool{}, subs: map[string]map[string]bool{}, flags: map[string]map[string]bool{}}
	help := func(args ...string) string {
		code, out, errOut := knotd(t, args...)
		require.Equal(t, exitOK, code, "knotd %s: %s", strings.Join(args, " "), errOut)
		return out + errOut
	}
	flagsOf := func(text string) map[string]bool {
		set := map[string]bool{"--help": true, "-h": true}
		for _, m := range helpFlag.FindAllStringSubmatch(text, -1) {
			set[m[1]] = true
		}
		return set
	}
	top := help("--help")
	f.flags[""] = flagsOf(top)
	for _, m := range usageCmd.FindAllStringSubmatch(top, -1) {
		f.commands[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`/ knotd ([a-z]+)`).FindAllStringSubmatch(top, -1) {
		f.commands[m[1]] = true
	}
	for _, m := range quotedCmd.FindAllStringSubmatch(top, -1) {
		f.commands[m[1]] = true
	}
	require.Greater(t, len(f.commands), 10, "commands in knotd --help:\n%s", top)
	for cmd := range f.commands {
		if cmd == "help" { // knotd help [CMD] is knotd [CMD] --help
			f.flags[cmd] = map[string]bool{}
			continue
		}
		text := help(cmd, "--help")
		f.flags[cmd] = flagsOf(text)
		sub := regexp.MustCompile(`(?m)^(?:usage:)?\s+knotd ` + cmd + ` ([a-z][a-z|-]*)`)
		for _, m := range sub.FindAllStringSubmatch(text, -1) {
			for _, s := range strings.Split(m[1], "|") {
				if f.subs[cmd] == nil {
					f.subs[cmd] = map[string]bool{}
				}
				f.subs[cmd][s] = true
			}
		}
	}
	f.keys = loaderKeys()
	f.fmKeys = frontmatterKeys(t)
	dir := t.TempDir()
	f.accepts = func(key string) bool {
		file := filepath.Join(dir, "config.yaml")
		require.NoError(t, os.WriteFile(file, []byte(keyYAML(key)), 0o600))
		_, err := config.Load(config.LoadOptions{Vault: dir, ConfigDir: dir, UserFile: file})
		return err == nil || !strings.Contains(err.Error(), "unknown key")
	}
	return f
}

// loaderKeys returns the keys of config.Settings, which the loader decodes
// a config file into (unknown keys are errors), as paths.
func loaderKeys() map[string]bool {
	keys := map[string]bool{}
	unmarshaler := reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler := reflect.TypeFor[encoding.TextUnmarshaler]()
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := range t.NumField() {
			field := t.Field(i)
			name, _, _ := strings.Cut(field.Tag.Get("yaml"), ",")
			if !field.IsExported() || name == "" || name == "-" || name == "name" {
				continue
			}
			key := prefix + name
			keys[key] = true
			ft := field.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft == reflect.TypeFor[time.Duration]() || reflect.PointerTo(ft).Implements(unmarshaler) || reflect.PointerTo(ft).Implements(textUnmarshaler) {
				continue
			}
			switch {
			case ft.Kind() == reflect.Struct:
				walk(key+".", ft)
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				walk(key+".*.", ft.Elem())
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(key+"[].", ft.Elem())
			}
		}
	}
	walk("", reflect.TypeFor[config.Settings]())
	return keys
}

// frontmatterKeys returns knotd's frontmatter keys as package frontmatter
// states them: the keys its message about an unknown knot_ key lists.
func frontmatterKeys(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := frontmatter.Parse([]byte("---\nknot_zzz: 1\n---\n"))
	require.NoError(t, err)
	require.Len(t, doc.Fields.Problems, 1)
	_, list, ok := strings.Cut(doc.Fields.Problems[0].Msg, "knotd's keys are ")
	require.True(t, ok, "frontmatter's message on an unknown key: %q", doc.Fields.Problems[0].Msg)
	keys := map[string]bool{}
	for _, k := range strings.Split(list, ", ") {
		keys[k] = true
	}
	require.Greater(t, len(keys), 4, list)
	return keys
}

// keyYAML returns a config file that sets key (a path as loaderKeys gives
// it) to null.
func keyYAML(key string) string {
	var value any
	parts := strings.Split(key, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		switch p := parts[i]; {
		case p == "*":
			value = map[string]any{"a": value}
		case strings.HasSuffix(p, "[]"):
			value = map[string]any{strings.TrimSuffix(p, "[]"): []any{value}}
		default:
			value = map[string]any{p: value}
		}
	}
	b, err := yaml.Marshal(value)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return string(b)
}

// docCommand is a knotd command line found in the documentation.
type docCommand struct {
	where string // file:line
	words []string
}

var (
	fence    = regexp.MustCompile("^(```+|~~~+)\\s*([a-z]*)")
	codeSpan = regexp.MustCompile("`([^`\n]+)`")
	flagTok  = regexp.MustCompile(`(?:^|[\s\[(|])(-{1,2}[a-z][a-z-]*)`)
)

// docNames returns the knotd command lines, the bare flag spans (flag →
// where) and the configuration keys (key → where) of docs.
func docNames(docs []doc) (cmds []docCommand, bare, keys, fmKeys map[string]string, problems []string) {
	bare, keys, fmKeys = map[string]string{}, map[string]string{}, map[string]string{}
	fmRow := regexp.MustCompile("^\\| `(knot_[a-z_]+)` \\|")
	for _, d := range docs {
		section := ""
		var open, lang string
		var block []string
		blockLine := 0
		for i, line := range strings.Split(d.text, "\n") {
			where := fmt.Sprintf("%s:%d", d.name, i+1)
			if m := fence.FindStringSubmatch(line); m != nil {
				if open == "" {
					open, lang, block, blockLine = m[1], m[2], nil, i+1
					continue
				}
				if strings.HasPrefix(line, open) && strings.TrimSpace(line) == open {
					if lang == "yaml" {
						if err := yamlKeys(block, keys, fmt.Sprintf("%s:%d", d.name, blockLine)); err != nil {
							problems = append(problems, fmt.Sprintf("%s: a yaml block that does not parse: %v", where, err))
						}
					}
					open = ""
					continue
				}
			}
			if open == "" && strings.HasPrefix(line, "## ") {
				section = line
			}
			if m := fmRow.FindStringSubmatch(line); m != nil && open == "" && section == "## Frontmatter" {
				fmKeys[m[1]] = where
			}
			if open != "" {
				block = append(block, line)
				if lang != "yaml" && lang != "ini" && lang != "xml" {
					if c, ok := commandLine(line, true); ok {
						cmds = append(cmds, docCommand{where, c})
					}
				}
				continue
			}
			for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
				span := m[1]
				if c, ok := commandLine(span, false); ok {
					cmds = append(cmds, docCommand{where, c})
				} else if f := flagTok.FindStringSubmatch(span); f != nil && strings.HasPrefix(span, f[1]) {
					if _, seen := bare[f[1]]; !seen {
						bare[f[1]] = where
					}
				}
			}
		}
	}
	return cmds, bare, keys, fmKeys, problems
}

// commandLine returns the words of a knotd command line (its command
// words and flags), or false if s is none.
func commandLine(s string, inBlock bool) ([]string, bool) {
	s = strings.TrimPrefix(s, "$ ")
	if s != "knotd" && !strings.HasPrefix(s, "knotd ") {
		return nil, false
	}
	if inBlock { // a description follows a gap or a comment
		if i := strings.Index(s, "  "); i >= 0 {
			s = s[:i]
		}
		if i := strings.Index(s, " #"); i >= 0 {
			s = s[:i]
		}
	}
	return strings.Fields(s)[1:], true
}

// yamlKeys adds the keys of a yaml block to keys, as paths.
func yamlKeys(block []string, keys map[string]string, where string) error {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(strings.Join(block, "\n")), &root); err != nil {
		return err
	}
	var walk func(prefix string, n *yaml.Node)
	walk = func(prefix string, n *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(prefix, c)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				walk(strings.TrimSuffix(prefix, ".")+"[].", c)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i].Value, n.Content[i+1]
				if prefix == "agents." { // agents by name
					walk("agents.*.", v)
					continue
				}
				key := prefix + k
				if _, seen := keys[key]; !seen {
					keys[key] = where
				}
				if key == "agents" || v.Kind == yaml.MappingNode && !strings.HasSuffix(key, ".env") || v.Kind == yaml.SequenceNode && len(v.Content) > 0 && v.Content[0].Kind == yaml.MappingNode {
					walk(key+".", v)
				}
			}
		}
	}
	walk("", &root)
	return nil
}

// checkDocs returns what the documentation and knotd disagree on.
func checkDocs(docs []doc, f *knotdFacts) []string {
	cmds, bare, keys, fmKeys, problems := docNames(docs)
	named := map[string]bool{} // flags named anywhere
	namedCmd := map[string]bool{}
	for _, c := range cmds {
		cmd, rest := "", c.words
		if len(rest) > 0 && regexp.MustCompile(`^[a-z]+$`).MatchString(rest[0]) {
			cmd, rest = rest[0], rest[1:]
			if slices.Contains(misspeltCommands, cmd) {
				continue
			}
			if !f.commands[cmd] {
				problems = append(problems, fmt.Sprintf("%s: knotd has no command %q (knotd --help)", c.where, cmd))
				continue
			}
			namedCmd[cmd] = true
			if subs := f.subs[cmd]; subs != nil && len(rest) > 0 {
				for _, s := range strings.Split(rest[0], "|") {
					if regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(s) {
						if !subs[s] {
							problems = append(problems, fmt.Sprintf("%s: knotd %s has no command %q (knotd %s --help)", c.where, cmd, s, cmd))
						}
						namedCmd[cmd+" "+s] = true
					}
				}
			}
		}
		for _, m := range flagTok.FindAllStringSubmatch(strings.Join(rest, " "), -1) {
			named[m[1]] = true
			if !f.flags[cmd][m[1]] {
				problems = append(problems, fmt.Sprintf("%s: %s is no flag of %s (see its --help)", c.where, m[1], strings.TrimSpace("knotd "+cmd)))
			}
		}
	}
	all := f.allFlags()
	for fl, where := range bare {
		named[fl] = true
		if foreignFlags[fl] == "" && !all[fl] {
			problems = append(problems, fmt.Sprintf("%s: %s is no flag of knotd or its commands (if it is another program's, list it in foreignFlags)", where, fl))
		}
	}
	for cmd, flags := range f.flags {
		for fl := range flags {
			if !named[fl] && fl != "-h" {
				problems = append(problems, fmt.Sprintf("%s --help has %s; no doc names it", strings.TrimSpace("knotd "+cmd), fl))
			}
		}
	}
	for cmd := range f.commands {
		if !namedCmd[cmd] {
			problems = append(problems, fmt.Sprintf("knotd --help has the command %q; no doc names it (as `knotd %s …`)", cmd, cmd))
		}
		for s := range f.subs[cmd] {
			if !namedCmd[cmd+" "+s] {
				problems = append(problems, fmt.Sprintf("knotd %s --help has the command %q; no doc names it", cmd, s))
			}
		}
	}
	for key, where := range keys {
		if !f.accepts(key) {
			problems = append(problems, fmt.Sprintf("%s: the configuration loader does not accept the key %s", where, key))
		}
	}
	for key := range f.keys {
		if _, ok := keys[key]; !ok {
			problems = append(problems, fmt.Sprintf("the configuration loader accepts %s; no doc's yaml block names it", key))
		}
	}
	for key, where := range fmKeys {
		if !f.fmKeys[key] {
			problems = append(problems, fmt.Sprintf("%s: knotd reads no frontmatter key %s", where, key))
		}
	}
	for key := range f.fmKeys {
		if _, ok := fmKeys[key]; !ok {
			problems = append(problems, fmt.Sprintf("knotd reads the frontmatter key %s; no doc's Frontmatter table names it", key))
		}
	}
	sort.Strings(problems)
	return problems
}

// TestDocs_NameWhatExists: every command, flag and configuration key the
// README and docs/ name exists (in knotd's --help, in the loader), and
// every one that exists is named.
func TestDocs_NameWhatExists(t *testing.T) {
	setup(t)
	facts := helpFacts(t)
	for key := range facts.keys {
		require.True(t, facts.accepts(key), "the loader refuses %s, a field of config.Settings:\n%s", key, keyYAML(key))
	}
	require.False(t, facts.accepts("limits.frobnicate"), "the loader accepts any key")
	for _, typo := range misspeltCommands {
		code, _, errOut := knotd(t, typo)
		require.Equal(t, exitUsage, code, "knotd %s is a command now: take it out of misspeltCommands", typo)
		require.Contains(t, errOut, "did you mean")
	}
	t.Logf("knotd's commands: %v; their own: %v; %d configuration keys", slices.Sorted(maps.Keys(facts.commands)), facts.subs, len(facts.keys))
	for _, p := range checkDocs(readDocs(t), facts) {
		t.Error(p)
	}
}

// TestDocs_CheckFindsDrift: checkDocs reports a doc that names a command,
// flag or key knotd does not have, and one that leaves out one knotd has.
func TestDocs_CheckFindsDrift(t *testing.T) {
	setup(t)
	facts := helpFacts(t)
	docs := readDocs(t)
	require.Empty(t, checkDocs(docs, facts), "the real docs must pass first (TestDocs_NameWhatExists)")
	add := func(text string) func([]doc) []doc {
		return func(ds []doc) []doc { return append(slices.Clone(ds), doc{"bad-doc.md", text}) }
	}
	cut := func(line string) func([]doc) []doc {
		return func(ds []doc) []doc {
			var out []doc
			found := false
			for _, d := range ds {
				var keep []string
				for _, l := range strings.Split(d.text, "\n") {
					if strings.HasPrefix(l, line) {
						found = true
						continue
					}
					keep = append(keep, l)
				}
				out = append(out, doc{d.name, strings.Join(keep, "\n")})
			}
			if !found {
				t.Fatalf("no doc line begins with %q", line)
			}
			return out
		}
	}
	tests := []struct {
		name   string
		change func([]doc) []doc
		want   string
	}{
		{"a flag knotd does not have", add("Run `knotd --debouce 2s ~/notes`.\n"), "bad-doc.md:1: --debouce is no flag of knotd"},
		{"a command's flag it does not have", add("```\nknotd runs --frob ~/notes   list\n```\n"), "bad-doc.md:2: --frob is no flag of knotd runs"},
		{"a flag of another command", add("`knotd status --cost`\n"), "--cost is no flag of knotd status"},
		{"a bare flag span", add("| `--frobnicate N` | frob |\n"), "bad-doc.md:1: --frobnicate is no flag of knotd or its commands"},
		{"a command knotd does not have", add("`knotd frobnicate ~/notes`\n"), `knotd has no command "frobnicate"`},
		{"a sub-command knotd does not have", add("`knotd runs shw 69ff6302`\n"), `knotd runs has no command "shw"`},
		{"a key the loader refuses", add("```yaml\nlimits:\n  max_note_size: 4MiB\n```\n"), "the configuration loader does not accept the key limits.max_note_size"},
		{"an agent key the loader refuses", add("```yaml\nagents:\n  mine: { command: [x], promt: stdin }\n```\n"), "does not accept the key agents.*.promt"},
		{"a key the loader accepts that no doc names", cut("run_empty:"), "the configuration loader accepts run_empty; no doc"},
		{"a flag no doc names", cut("| `--max-wait DUR`"), "knotd --help has --max-wait; no doc names it"},
		{"a frontmatter key knotd does not read", add("## Frontmatter\n\n| key | meaning |\n| --- | --- |\n| `knot_colour` | a colour |\n"), "bad-doc.md:5: knotd reads no frontmatter key knot_colour"},
		{"a frontmatter key no doc names", cut("| `knot_model` |"), "knotd reads the frontmatter key knot_model; no doc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := checkDocs(tt.change(docs), facts)
			found := false
			for _, p := range problems {
				found = found || strings.Contains(p, tt.want)
			}
			if !found {
				t.Errorf("checkDocs found no %q; it found:\n%s", tt.want, strings.Join(problems, "\n"))
			}
		})
	}
}

// TestDocs_RunsShowExampleWorks: the id the docs give knotd runs show in
// their examples is a short id (the last 8 hex digits of a run id, as
// knotd runs shows it), and that form names a run, where the same number
// of the id's first digits names every run of the same minute or so.
func TestDocs_RunsShowExampleWorks(t *testing.T) {
	example := regexp.MustCompile(`knotd runs show ([^\s\x60]+)`)
	var ids []string
	for _, d := range readDocs(t) {
		for _, m := range example.FindAllStringSubmatch(d.text, -1) {
			if m[1] != strings.ToUpper(m[1]) || strings.ContainsAny(m[1], "0123456789") { // not a placeholder (RUN_ID)
				ids = append(ids, m[1])
			}
		}
	}
	require.NotEmpty(t, ids, "no doc shows knotd runs show with an id")
	for _, id := range ids {
		require.Regexp(t, `^[0-9a-f]{8}$`, id, "the docs' knotd runs show %s: not a short id (the last 8 hex digits of a run id)", id)
	}
	v, runA, runB := runsVault(t)
	for _, run := range []string{runA, runB} {
		short := run[len(run)-8:]
		code, out, errOut := knotd(t, "runs", "show", short, v)
		require.Equal(t, exitOK, code, "knotd runs show %s (the docs' form): %s", short, errOut)
		require.Contains(t, out, run)
	}
	if runA[:8] == runB[:8] { // the usual case: two runs within about a minute
		code, _, errOut := knotd(t, "runs", "show", runA[:8], v)
		require.NotEqual(t, exitOK, code, "knotd runs show %s names two runs", runA[:8])
		require.Contains(t, errOut, runA)
		require.Contains(t, errOut, runB)
	}
}

// TestDocs_QuickstartInstalls: the README's install commands work as
// written: scripts/demo installs knotd and shows it at work offline, and
// go install ./cmd/knotd installs it.
func TestDocs_QuickstartInstalls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and installs knotd")
	}
	readme := readDocs(t)[0]
	require.Equal(t, "README.md", readme.name)
	for _, cmd := range []string{"scripts/demo", "scripts/test", "go install ./cmd/knotd"} {
		require.Regexp(t, "(?m)^"+regexp.QuoteMeta(cmd)+" ", readme.text, "the README's quickstart has no %s", cmd)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	env := func(gobin string) []string {
		return append(os.Environ(), "GOBIN="+gobin, "TMPDIR="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	}

	gobin := t.TempDir()
	demo := exec.Command(filepath.Join(root, "scripts", "demo"))
	demo.Dir, demo.Env = root, env(gobin)
	out, err := demo.CombinedOutput()
	require.NoError(t, err, "scripts/demo:\n%s", out)
	require.Contains(t, string(out), "knotd --once: nothing changed since, so nothing runs", "scripts/demo:\n%s", out)
	require.FileExists(t, filepath.Join(gobin, "knotd"+exeSuffix()))

	gobin = t.TempDir()
	install := exec.Command("go", "install", "./cmd/knotd")
	install.Dir, install.Env = root, env(gobin)
	out, err = install.CombinedOutput()
	require.NoError(t, err, "go install ./cmd/knotd:\n%s", out)
	version, err := exec.Command(filepath.Join(gobin, "knotd"+exeSuffix()), "--version").CombinedOutput()
	require.NoError(t, err, "the installed knotd --version:\n%s", version)
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown text.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := ""
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, line := range strings.Split(text, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			if inFence == "" {
				inFence = m[1]
			} else if strings.TrimSpace(line) == inFence {
				inFence = ""
			}
			continue
		}
		if inFence != "" || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(title), ""), " ", "-")
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// TestDocs_LinksLead: every relative link of the README and docs/, and
// every docs/… reference in the code, leads to a file that exists and a
// heading it has.
func TestDocs_LinksLead(t *testing.T) {
	root := filepath.Join("..", "..")
	anchorsOf := map[string]map[string]bool{}
	check := func(from, target string) error {
		file, anchor, _ := strings.Cut(target, "#")
		if file != "" {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
				return err
			}
		}
		if anchor == "" || !strings.HasSuffix(file, ".md") {
			return nil
		}
		if anchorsOf[file] == nil {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
			if err != nil {
				return err
			}
			anchorsOf[file] = headingAnchors(string(b))
		}
		if !anchorsOf[file][anchor] {
			return fmt.Errorf("%s has no heading #%s", file, anchor)
		}
		return nil
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	links := 0
	for _, d := range readDocs(t) {
		for _, m := range link.FindAllStringSubmatch(d.text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if strings.HasPrefix(target, "#") {
				target = d.name + target
			} else {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(d.name), target))
			}
			links++
			if err := check(d.name, target); err != nil {
				t.Errorf("%s: link (%s): %v", d.name, m[1], err)
			}
		}
	}
	require.Greater(t, links, 20)
	ref := regexp.MustCompile(`\bdocs/[a-z]+\.md(?:#[a-z0-9-]+)?`)
	readmeRef := regexp.MustCompile(`github\.com/knotd/knotd#([a-z0-9-]+)`)
	refs := 0
	err := filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == ".git" || e.Name() == ".cache" || e.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, r := range ref.FindAllString(string(b), -1) {
			refs++
			if err := check(path, r); err != nil {
				t.Errorf("%s: %s: %v", path, r, err)
			}
		}
		for _, m := range readmeRef.FindAllStringSubmatch(string(b), -1) {
			refs++
			if err := check(path, "README.md#"+m[1]); err != nil {
				t.Errorf("%s: %s: %v", path, m[0], err)
			}
		}
		return nil
	})
	require.NoError(t, err)
	t.Logf("%d links in the docs, %d references to them in the code", links, refs)
}

// docFile is a source file or folder the docs name in backquotes:
// internal/vault/, cmd/knotd/run_test.go, retry_test.go.
var docFile = regexp.MustCompile("`((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]*(?:\\.go|/))`")

// missingFiles returns the files and folders the docs name that are not
// in the repository (files lists every file, slash-separated, from the
// root): a bare file name must be somewhere, a path (or folder) with a
// slash must be the end of one from the root (testdata/recorded/ within
// an agent's folder). A folder of one name (runs/, rescued/) and a file
// name's end (_unix.go) may be anything else: they are not checked.
func missingFiles(docs []doc, files []string) []string {
	exists := map[string]bool{}
	add := func(p string) {
		for {
			exists[p] = true
			i := strings.IndexByte(strings.TrimSuffix(p, "/"), '/')
			if i < 0 {
				return
			}
			p = p[i+1:]
		}
	}
	for _, f := range files {
		add(f)
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			add(d + "/")
		}
	}
	var problems []string
	for _, d := range docs {
		for _, m := range docFile.FindAllStringSubmatch(d.text, -1) {
			name := m[1]
			inner := strings.Contains(strings.TrimSuffix(name, "/"), "/")
			switch {
			case strings.HasPrefix(name, "_"), strings.HasPrefix(name, "."):
				continue // a file name's end, or not a path in the repository
			case strings.HasSuffix(name, "/") && !inner:
				continue // a folder of one name: knotd's own, or the user's
			}
			if !exists[name] {
				problems = append(problems, fmt.Sprintf("%s names %s, which is not in the repository", d.name, name))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// TestDocs_FilesNamedExist: every source file and folder the README and
// docs/ name (the tests behind a guarantee, the file a reader starts at)
// is where they say.
func TestDocs_FilesNamedExist(t *testing.T) {
	root := filepath.Join("..", "..")
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == ".git" || e.Name() == ".cache" || e.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !e.IsDir() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	}))
	require.Empty(t, missingFiles([]doc{{"a.md", "see `retry_test.go` and `internal/vault/`"}}, files), "files that exist")
	require.Equal(t, []string{"a.md names internal/nothere.go, which is not in the repository"},
		missingFiles([]doc{{"a.md", "see `internal/nothere.go`"}}, files), "a file that does not")
	for _, p := range missingFiles(readDocs(t), files) {
		t.Error(p)
	}
}
