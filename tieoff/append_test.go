package tieoff

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/knotd/knotd/strand"
)

// TestAppend_AfterHandEdits appends to tie-offs a user edited: the new
// section always comes out whole and top-level, and what was there stays.
func TestAppend_AfterHandEdits(t *testing.T) {
	first := string(mustFormat(t, mkSection(0, strand.Created, "n.md", "Reply.")))
	next := mkSection(1, strand.Modified, "n.md", "Next reply.")
	tests := []struct {
		name     string
		existing string
		joint    string // what Append puts between the old end and the section
		problems int    // problems Parse reports afterwards
	}{
		{"ends with newline", first, separator, 0},
		{"no final newline", first + "my note", "\n" + separator, 0},
		{"CRLF ending", strings.ReplaceAll(first, "\n", "\r\n"), separator, 0},
		{"fence left open", first + "```\ncode\n", "```\n" + separator, 0},
		{"fence left open, no newline", first + "~~~~\ncode", "\n~~~~\n" + separator, 0},
		{"comment left open", first + "<!-- todo\n", "-->\n" + separator, 0},
		{"blank file", "\n\n", "", 0},
		{"blank file without newline", "  ", "\n", 0},
		{"notes and no section", "My notes about this strand.\n", separator, 1},
		{"notes with an open fence", "```\nnotes\n", "```\n" + separator, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "n.tieoff.md")
			if err := os.WriteFile(path, []byte(tt.existing), 0o644); err != nil {
				t.Fatal(err)
			}
			off := mustAppend(t, path, next)
			got := mustReadFile(t, path)
			want := tt.existing + tt.joint + string(mustFormat(t, next))
			if string(got) != want {
				t.Fatalf("file after Append = %q; want %q", got, want)
			}
			if want := int64(len(tt.existing) + len(tt.joint)); off != want {
				t.Errorf("offset = %d; want %d", off, want)
			}
			secs, probs := Parse(got)
			if len(probs) != tt.problems {
				t.Errorf("Parse problems = %s; want %d", problemsString(probs), tt.problems)
			}
			if len(secs) == 0 {
				t.Fatal("no section read back")
			}
			if err := sameSection(secs[len(secs)-1], written(next)); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestAppend_LastSectionOutsideWindow: when the last section started more
// than the repair window ago, Append only makes sure of the final newline.
func TestAppend_LastSectionOutsideWindow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "n.tieoff.md")
	big := strings.Repeat("A long reply line.\n", repairWindow/10)
	mustAppend(t, path, mkSection(0, strand.Created, "n.md", big))
	mustAppend(t, path, mkSection(1, strand.Modified, "n.md", big))
	secs := mustRead(t, path)
	if len(secs) != 2 || secs[1].Body != big {
		t.Fatalf("Read = %d sections", len(secs))
	}
}

func TestAppend_Refuses(t *testing.T) {
	dir := t.TempDir()
	s := mkSection(0, strand.Created, "n.md", "x")

	missing := filepath.Join(dir, "no", "such", "dir", "n.tieoff.md")
	if _, err := Append(missing, s); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append into a missing directory = %v; want ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append created a directory: %v", err)
	}

	bad := filepath.Join(dir, "bad.tieoff.md")
	if _, err := Append(bad, Section{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Append(invalid section) = %v; want ErrInvalid", err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append(invalid section) created the file: %v", err)
	}

	if _, err := Append(dir, s); err == nil {
		t.Error("Append(directory) succeeded; want an error")
	}
}

func TestAppend_RefusesLinksAndFIFOs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links and FIFOs need privileges or do not exist")
	}
	dir := t.TempDir()
	s := mkSection(0, strand.Created, "n.md", "x")
	outside := filepath.Join(t.TempDir(), "outside.md")
	if err := os.WriteFile(outside, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.tieoff.md")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling.tieoff.md")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, dangling} {
		if _, err := Append(p, s); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Append(symlink %s) = %v; want ErrNotRegular", p, err)
		}
		if _, _, err := Read(p); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Read(symlink %s) = %v; want ErrNotRegular", p, err)
		}
		if _, err := Tail(p, 1, 100); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Tail(symlink %s) = %v; want ErrNotRegular", p, err)
		}
		if err := Replace(p, s); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Replace(symlink %s) = %v; want ErrNotRegular", p, err)
		}
	}
	if got := mustReadFile(t, outside); string(got) != "secret\n" {
		t.Errorf("file behind the link changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append created the dangling link's target: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.tieoff.md")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := Append(fifo, s); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Append(FIFO) = %v; want ErrNotRegular", err)
	}
	if _, err := Tail(fifo, 1, 100); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Tail(FIFO) = %v; want ErrNotRegular", err)
	}
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "n.tieoff.md")
	_, doc := threeSections(t)
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	s := mkSection(9, strand.Modified, "n.md", "Only this.")
	if err := Replace(path, s); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if got := mustReadFile(t, path); !bytes.Equal(got, mustFormat(t, s)) {
		t.Errorf("after Replace = %q; want only the new section", got)
	}
	secs := mustRead(t, path)
	if len(secs) != 1 || sameSection(secs[0], written(s)) != nil {
		t.Errorf("Read after Replace = %+v", secs)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("mode after Replace = %v, %v; want 0640 kept", fi.Mode(), err)
		}
	}
	// A new file, and nothing left behind.
	fresh := filepath.Join(dir, "fresh.tieoff.md")
	if err := Replace(fresh, s); err != nil {
		t.Fatalf("Replace(new file): %v", err)
	}
	if got := mustReadFile(t, fresh); !bytes.Equal(got, mustFormat(t, s)) {
		t.Errorf("new file = %q", got)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v; want the two tie-offs only", names)
	}
	if err := Replace(filepath.Join(dir, "missing", "x.tieoff.md"), s); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Replace into a missing directory = %v; want ErrNotExist", err)
	}
	if err := Replace(path, Section{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Replace(invalid) = %v; want ErrInvalid", err)
	}
}
