package edits

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSaves_LeaveTheExpectedContent(t *testing.T) {
	for _, s := range Saves(time.Millisecond) {
		t.Run(s.Name, func(t *testing.T) {
			dir := t.TempDir()
			abs := filepath.Join(dir, "note.md")
			orig := []byte("# Note\n\nBody.\n")
			if err := os.WriteFile(abs, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			at, err := s.Do(abs, "tok")
			if err != nil {
				t.Fatalf("save: %v", err)
			}
			if at.Before(before) {
				t.Errorf("save returned %v, before it started (%v)", at, before)
			}
			got, err := os.ReadFile(abs)
			if err != nil {
				t.Fatal(err)
			}
			changed := !bytes.Equal(got, orig)
			if changed != (s.Runs == 1) {
				t.Errorf("content changed = %v; want %v (runs %d):\n%s", changed, s.Runs == 1, s.Runs, got)
			}
			if changed && (!bytes.HasPrefix(got, orig) || !strings.Contains(string(got), "tok")) {
				t.Errorf("content = %q; want the original and a line with the token", got)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("the save left %d files in the directory; want only the note", len(entries))
			}
		})
	}
}

func TestAppendEdit(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "note.md")
	if err := os.WriteFile(abs, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Append(abs, "t1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(abs); string(got) != "x\n\n- [ ] follow up t1\n" {
		t.Errorf("appendEdit: content %q", got)
	}
	if err := Append(filepath.Join(t.TempDir(), "missing.md"), "t"); err == nil {
		t.Error("appendEdit of a missing note succeeded; want an error")
	}
}

func TestWriteAll(t *testing.T) {
	dir := t.TempDir()
	var abs []string
	for i := range 9 {
		p := filepath.Join(dir, strings.Repeat("n", i+1)+".md")
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		abs = append(abs, p)
	}
	if span, err := WriteAll(abs, "tok"); err != nil || span <= 0 {
		t.Fatalf("writeAll = %v, %v; want a span and no error", span, err)
	}
	for _, p := range abs {
		if b, _ := os.ReadFile(p); string(b) != "x\n\n- [ ] follow up tok\n" {
			t.Errorf("writeAll: %s = %q; want one added line", p, b)
		}
	}
	if _, err := WriteAll(append(abs, filepath.Join(dir, "missing.md")), "t"); err == nil {
		t.Error("writeAll with a missing note succeeded; want an error")
	}
	for _, p := range abs {
		if b, _ := os.ReadFile(p); string(b) != "x\n\n- [ ] follow up tok\n" {
			t.Errorf("writeAll with a missing note wrote %s = %q; want nothing written", p, b)
		}
	}
}
