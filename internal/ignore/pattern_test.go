package ignore

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatchElem(t *testing.T) {
	tests := []struct {
		glob, name string
		want       bool
	}{
		{"*.md", "a.md", true},
		{"*.md", "a.txt", false},
		{"*.md", ".md", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"a*", "a", true},
		{"?.md", "é.md", true},
		{"?.md", "ab.md", false},
		{"[abc].md", "b.md", true},
		{"[abc].md", "d.md", false},
		{"[!abc].md", "d.md", true},
		{"[!abc].md", "a.md", false},
		{"[^abc].md", "a.md", false},
		{"[a-c]x", "bx", true},
		{"[a-c]x", "dx", false},
		{"[]a]", "]", true},
		{"[!]a]", "]", false},
		{"[a-]", "-", true},
		{"[[:digit:]]", "7", true},
		{"[[:digit:]]", "x", false},
		{"[[:alpha:][:digit:]]", "x", true},
		{"[[:bogus:]]", "x", false},
		{"[abc", "a", false},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{`\#a`, "#a", true},
		{`\!a`, "!a", true},
		{`a\`, "a", false},
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"***", "abc", true},
		{"caf[é]", "café", true},
	}
	for _, tt := range tests {
		if got := matchElem(tt.glob, tt.name); got != tt.want {
			t.Errorf("matchElem(%q, %q) = %v; want %v", tt.glob, tt.name, got, tt.want)
		}
	}
}

func TestParsePattern(t *testing.T) {
	tests := []struct {
		line     string
		ok       bool
		negate   bool
		dirOnly  bool
		anchored bool
		segs     string // joined with "|"
	}{
		{"", false, false, false, false, ""},
		{"# comment", false, false, false, false, ""},
		{"   ", false, false, false, false, ""},
		{"!", false, true, false, false, ""},
		{"/", false, false, true, false, ""},
		{"*.md", true, false, false, false, "*.md"},
		{"!keep.md", true, true, false, false, "keep.md"},
		{"drafts/", true, false, true, false, "drafts"},
		{"/top.md", true, false, false, true, "top.md"},
		{"doc/*.md", true, false, false, true, "doc|*.md"},
		{"**/logs", true, false, false, true, "**|logs"},
		{"a/**/b/", true, false, true, true, "a|**|b"},
		{"foo/**", true, false, false, true, "foo|**"},
		{"a**z.md", true, false, false, false, "a*z.md"},
		{"**", true, false, false, false, "*"},
		{`\#hash.md`, true, false, false, false, `\#hash.md`},
		{`\!bang.md`, true, false, false, false, `\!bang.md`},
		{"trail.md   ", true, false, false, false, "trail.md"},
		{`esc\ .md\ `, true, false, false, false, `esc\ .md\ `},
		{`a\**b`, true, false, false, false, `a\**b`},
	}
	for _, tt := range tests {
		p, ok := parsePattern(tt.line)
		if ok != tt.ok {
			t.Errorf("parsePattern(%q) ok = %v; want %v", tt.line, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		var raw []string
		for _, g := range p.segs {
			raw = append(raw, g.raw)
		}
		got := strings.Join(raw, "|")
		if p.negate != tt.negate || p.dirOnly != tt.dirOnly || p.anchored != tt.anchored || got != tt.segs {
			t.Errorf("parsePattern(%q) = negate %v dirOnly %v anchored %v segs %q; want %v %v %v %q",
				tt.line, p.negate, p.dirOnly, p.anchored, got, tt.negate, tt.dirOnly, tt.anchored, tt.segs)
		}
	}
}

func TestCompileGlob(t *testing.T) {
	tests := []struct {
		glob string
		kind globKind
		in   []string
		out  []string
	}{
		{"drafts", globLiteral, []string{"drafts"}, []string{"draft", "drafts2"}},
		{"*.md", globSuffix, []string{"a.md", ".md"}, []string{"a.mdx"}},
		{"old-*", globPrefix, []string{"old-", "old-x"}, []string{"ol"}},
		{"*", globAny, []string{"", "x"}, nil},
		{"**", globDoubleStar, nil, []string{"x"}},
		{"*.[mM]d", globGeneral, []string{"a.Md"}, []string{"a.txt"}},
		{`\*x`, globGeneral, []string{"*x"}, []string{"ax"}},
		{"a*b", globGeneral, []string{"ab", "axxb"}, []string{"ba"}},
	}
	for _, tt := range tests {
		g := compileGlob(tt.glob)
		if g.kind != tt.kind {
			t.Errorf("compileGlob(%q).kind = %d; want %d", tt.glob, g.kind, tt.kind)
		}
		for _, s := range tt.in {
			if !g.match(s) {
				t.Errorf("compileGlob(%q).match(%q) = false; want true", tt.glob, s)
			}
		}
		for _, s := range tt.out {
			if g.match(s) {
				t.Errorf("compileGlob(%q).match(%q) = true; want false", tt.glob, s)
			}
		}
	}
}

func TestMatchSegs(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**/b", "a/b/c", false}, // exact: Rules checks ancestors separately
		{"**/logs", "logs", true},
		{"**/logs", "x/y/logs", true},
		{"foo/**", "foo", false},
		{"foo/**", "foo/a", true},
		{"foo/**", "foo/a/b", true},
		{"doc/*.md", "doc/a.md", true},
		{"doc/*.md", "doc/sub/a.md", false},
		{"/top.md", "top.md", true},
		{"/top.md", "x/top.md", false},
		{"**/a/**/b", "x/a/y/a/z/b", true},
		{"**/a/**/b", "x/a/y/b/z", false},
		{"a/**/**/b", "a/b", true},
		{"**/**", "x", true},
		{"a/**/b/**", "a/x/b", false},
		{"a/**/b/**", "a/x/b/c", true},
		{"**/" + strings.Repeat("x/**/", 12) + "y", strings.Repeat("x/", 40) + "z", false}, // must not be exponential
	}
	for _, tt := range tests {
		p, ok := parsePattern(tt.pattern)
		if !ok {
			t.Fatalf("parsePattern(%q) failed", tt.pattern)
		}
		if got := p.match(strings.Split(tt.path, "/"), false); got != tt.want {
			t.Errorf("pattern %q match(%q) = %v; want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

// FuzzMatchElem checks that matching never panics and agrees with
// path.Match wherever both define the same syntax, on valid UTF-8.
func FuzzMatchElem(f *testing.F) {
	for _, s := range [][2]string{
		{"*.md", "a.md"}, {"[a-c]?x*", "bqxyz"}, {"[!a]", "b"}, {`\*`, "*"},
		{"a*b*c*d", "aXbXcXd"}, {"[[:alpha:]]", "é"}, {"[]", "]"}, {"*", ""},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, glob, name string) {
		got := matchElem(glob, name)
		if strings.Contains(name, "/") || strings.Contains(glob, "/") ||
			strings.Contains(glob, "[!") || strings.Contains(glob, "[^") ||
			strings.Contains(glob, "[:") || strings.Contains(glob, "[]") ||
			strings.Contains(glob, "[\\") {
			return // syntax path.Match reads differently
		}
		if !utf8.ValidString(glob) || !utf8.ValidString(name) ||
			strings.Contains(glob, "*") && strings.ContainsFunc(name, func(r rune) bool { return r >= utf8.RuneSelf }) {
			return // path.Match's "*" may stop inside a character; ours moves by characters
		}
		want, err := path.Match(glob, name)
		if err != nil {
			return
		}
		if got != want {
			t.Errorf("matchElem(%q, %q) = %v; path.Match says %v", glob, name, got, want)
		}
	})
}
