package frontmatter

import "testing"

func TestValueEnd(t *testing.T) {
	tests := []struct {
		line  string // the value (with any anchor and tag) starts at the first byte
		value string // the line up to where the value ends; "" when it does not end on this line
	}{
		{"plain", "plain"},
		{"plain with spaces   ", "plain with spaces"},
		{"a#b # comment", "a#b"},
		{"a\t# comment", "a"},
		{`"a # b" # c`, `"a # b"`},
		{`"esc \" # x"`, `"esc \" # x"`},
		{`'it''s' # c`, `'it''s'`},
		{`[a, "]", 'b]'] # c`, `[a, "]", 'b]']`},
		{`{k: [v]}   `, `{k: [v]}`},
		{`[it's, x]`, `[it's, x]`},
		{`&anchor !!str v # c`, `&anchor !!str v`},
		{`"unterminated`, ""},
		{`[a,`, ""},
		{`[a, # c`, ""},
		{`"a"b`, ""},
		{`"a"# not a comment`, ""},
		{`# only a comment`, ""},
	}
	for _, tt := range tests {
		end, ok := valueEnd([]byte(tt.line), 0)
		got := ""
		if ok {
			got = tt.line[:end]
		}
		if got != tt.value {
			t.Errorf("valueEnd(%q) = %q; want %q", tt.line, got, tt.value)
		}
	}
}

func TestKeyEnd(t *testing.T) {
	tests := []struct {
		line  string
		colon int // -1 when there is none
	}{
		{"key: v", 3},
		{"key:", 3},
		{"key :\tv", 4},
		{"a:b: c", 3},
		{`"a: b": c`, 6},
		{`'it''s' : c`, 8},
		{`!!str k: v`, 7},
		{"no colon here", -1},
		{`"open: x`, -1},
	}
	for _, tt := range tests {
		got, ok := keyEnd([]byte(tt.line), 0)
		if !ok {
			got = -1
		}
		if got != tt.colon {
			t.Errorf("keyEnd(%q) = %d; want %d", tt.line, got, tt.colon)
		}
	}
}

func TestSplitLines(t *testing.T) {
	src := []byte("a\r\nb\rc\nd\u2028e\u0085f")
	var got []string
	for _, l := range splitLines(src, Span{0, len(src)}) {
		got = append(got, string(src[l.start:l.end]))
	}
	want := []string{"a", "b", "c", "d", "e", "f"}
	if len(got) != len(want) {
		t.Fatalf("splitLines(%q) = %q; want %q", src, got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("splitLines(%q) = %q; want %q", src, got, want)
		}
	}
}
