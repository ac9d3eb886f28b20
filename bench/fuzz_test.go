package main

import (
	"bytes"
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

func FuzzLogBook_Write(f *testing.F) {
	f.Add([]byte(`{"msg":"run started","strand":"a.md"}`+"\n"), 3)
	f.Add([]byte("not json\n{\"msg\":1}\n{"), 1)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		b := newLogBook()
		if split < 0 || split > len(data) {
			split = len(data) / 2
		}
		b.Write(data[:split])
		b.Write(data[split:])
		lines := bytes.Count(data, []byte("\n"))
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.lines) > lines {
			t.Errorf("%d JSON lines from %d newlines", len(b.lines), lines)
		}
	})
}
