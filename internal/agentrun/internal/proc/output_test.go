package proc

import (
	"bytes"
	"strings"
	"testing"
)

func TestCapWriter(t *testing.T) {
	w := &capWriter{max: 5}
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if string(w.buf) != "abcde" || w.n != 10 || !w.truncated() {
		t.Errorf("capWriter kept %q of %d bytes, truncated=%v; want abcde of 10, truncated", w.buf, w.n, w.truncated())
	}
	w = &capWriter{max: 5}
	w.Write([]byte("abcde"))
	if w.truncated() {
		t.Error("capWriter truncated at exactly max bytes")
	}
}

func TestLineSplitter(t *testing.T) {
	tests := []struct {
		name    string
		writes  []string
		max     int
		lines   []string
		dropped int
	}{
		{"one write", []string{"a\nbb\n"}, 10, []string{"a", "bb"}, 0},
		{"split across writes", []string{"a", "b\nc", "d\n"}, 10, []string{"ab", "cd"}, 0},
		{"crlf", []string{"a\r\nb\r\n"}, 10, []string{"a", "b"}, 0},
		{"no final newline", []string{"a\nlast"}, 10, []string{"a", "last"}, 0},
		{"empty lines", []string{"\n\nx\n"}, 10, []string{"", "", "x"}, 0},
		{"too long", []string{"short\n", strings.Repeat("x", 6), strings.Repeat("x", 6), "\nok\n"}, 8, []string{"short", "ok"}, 1},
		{"too long at the end", []string{"ok\n" + strings.Repeat("y", 20)}, 8, []string{"ok"}, 1},
	}
	for _, tt := range tests {
		var got []string
		s := &lineSplitter{max: tt.max, fn: func(b []byte) { got = append(got, string(b)) }}
		for _, w := range tt.writes {
			s.write([]byte(w))
		}
		s.flush()
		if strings.Join(got, "|") != strings.Join(tt.lines, "|") || s.dropped != tt.dropped {
			t.Errorf("%s: lines %q dropped %d; want %q dropped %d", tt.name, got, s.dropped, tt.lines, tt.dropped)
		}
	}
}

func FuzzLineSplitter(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\nccc"), 3)
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		var got [][]byte
		s := &lineSplitter{max: len(in) + 1, fn: func(b []byte) { got = append(got, bytes.Clone(b)) }}
		if cut < 0 || cut > len(in) {
			cut = len(in) / 2
		}
		s.write(in[:cut])
		s.write(in[cut:])
		s.flush()
		var want [][]byte
		for _, l := range bytes.Split(in, []byte("\n")) {
			want = append(want, bytes.TrimSuffix(l, []byte("\r")))
		}
		if len(in) == 0 || in[len(in)-1] == '\n' {
			want = want[:len(want)-1]
		}
		if len(got) != len(want) {
			t.Fatalf("split %q into %q; want %q", in, got, want)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("split %q into %q; want %q", in, got, want)
			}
		}
	})
}

func TestTailWriter(t *testing.T) {
	tests := []struct {
		writes    []string
		want      string
		truncated bool
	}{
		{[]string{"abc"}, "abc", false},
		{[]string{"abcd", "efgh"}, "efgh", true},
		{[]string{"0123456789"}, "6789", true},
		{[]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, "ghij", true},
		{[]string{"ab", "cd"}, "abcd", false},
		{[]string{"xé", "éé"}, "éé", true}, // never starts inside a rune
	}
	for _, tt := range tests {
		w := &tailWriter{max: 4}
		for _, s := range tt.writes {
			w.Write([]byte(s))
		}
		if w.String() != tt.want || w.truncated() != tt.truncated {
			t.Errorf("tail of %q = %q truncated=%v; want %q %v", tt.writes, w.String(), w.truncated(), tt.want, tt.truncated)
		}
	}
}
