package knotdlog

import (
	"bytes"
	"testing"
)

func FuzzLogBook_Write(f *testing.F) {
	f.Add([]byte(`{"msg":"run started","strand":"a.md"}`+"\n"), 3)
	f.Add([]byte("not json\n{\"msg\":1}\n{"), 1)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		b := NewBook()
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
