package agentruns

import (
	"testing"
)

func FuzzParseStamp(f *testing.F) {
	f.Add("1795291553149869227 a/b.md Modified 01a1ffb7-28c7-7ca9-838c-850456cfb753")
	f.Add("12 /v/c.md - -")
	f.Add("x y z w")
	f.Fuzz(func(t *testing.T, line string) {
		s, err := parseStamp(line)
		if err == nil && (s.Strand == "" || s.Event == "" || s.Run == "") {
			t.Errorf("parseStamp(%q) = %+v with empty fields and no error", line, s)
		}
	})
}
