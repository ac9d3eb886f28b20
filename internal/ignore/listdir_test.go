package ignore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReadDir_InfoAgreesWithLstat: the entries' Info, made from a stat
// relative to the open directory, says what os.Lstat says of each kind of
// entry.
func TestReadDir_InfoAgreesWithLstat(t *testing.T) {
	dir := t.TempDir()
	mk := map[string]func(p string) error{
		"note.md":  func(p string) error { return os.WriteFile(p, []byte("# a note\n"), 0o640) },
		"empty.md": func(p string) error { return os.WriteFile(p, nil, 0o600) },
		"exec.md":  func(p string) error { return os.WriteFile(p, []byte("x"), 0o755) },
		"link.md":  func(p string) error { return os.Symlink("note.md", p) },
		"dangling": func(p string) error { return os.Symlink("nowhere", p) },
		"sub":      func(p string) error { return os.Mkdir(p, 0o750) },
	}
	addSpecialFiles(t, mk)
	for name, f := range mk {
		if err := f(filepath.Join(dir, name)); err != nil {
			t.Fatalf("make %s: %v", name, err)
		}
	}
	old := time.Date(2020, 2, 3, 4, 5, 6, 789_000_000, time.UTC)
	if err := os.Chtimes(filepath.Join(dir, "note.md"), old, old); err != nil {
		t.Fatal(err)
	}

	entries, done, err := readDir(dir, false)
	if err != nil {
		t.Fatalf("readDir: %v", err)
	}
	defer func() {
		if err := done(); err != nil {
			t.Errorf("done: %v", err)
		}
	}()
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.IsSorted(names) || len(names) != len(mk) {
		t.Fatalf("readDir names = %q; want the %d entries in lexical order", names, len(mk))
	}
	for _, e := range entries {
		got, err := e.Info()
		if err != nil {
			t.Errorf("%s: Info: %v", e.Name(), err)
			continue
		}
		want, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if got.Name() != want.Name() || got.Size() != want.Size() || got.Mode() != want.Mode() ||
			!got.ModTime().Equal(want.ModTime()) || got.IsDir() != want.IsDir() {
			t.Errorf("%s: Info() = %s %d %v %v; want %s %d %v %v (os.Lstat)", e.Name(),
				got.Name(), got.Size(), got.Mode(), got.ModTime(), want.Name(), want.Size(), want.Mode(), want.ModTime())
		}
		if e.Type() != got.Mode().Type() {
			t.Errorf("%s: Type() = %v; Info().Mode().Type() = %v", e.Name(), e.Type(), got.Mode().Type())
		}
	}
}

// TestReadDir_InfoOfVanishedFile: an entry removed after the listing
// reports not-exist, as os.Lstat would.
func TestReadDir_InfoOfVanishedFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "gone.md")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	entries, done, err := readDir(dir, false)
	if err != nil || len(entries) != 1 {
		t.Fatalf("readDir = %d entries, %v; want 1", len(entries), err)
	}
	defer func() { _ = done() }()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := entries[0].Info(); !os.IsNotExist(err) {
		t.Errorf("Info() of a removed file = %v; want not-exist", err)
	}
}

// TestReadDir_Errors: what cannot be listed says why, as os.ReadDir
// would, and leaves nothing open.
func TestReadDir_Errors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "note.md")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		abs      string
		notExist bool
	}{
		{"missing", filepath.Join(dir, "missing"), true},
		{"below a file", filepath.Join(file, "sub"), false},
		{"a file", file, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, done, err := readDir(tt.abs, false)
			if derr := done(); derr != nil {
				t.Errorf("done() = %v", derr)
			}
			if err == nil {
				t.Fatalf("readDir(%s) = %d entries, no error; want an error", tt.abs, len(entries))
			}
			if got := errors.Is(err, fs.ErrNotExist); got != tt.notExist {
				t.Errorf("readDir(%s) = %v; not-exist %v, want %v", tt.abs, err, got, tt.notExist)
			}
			if !strings.Contains(err.Error(), tt.abs) {
				t.Errorf("readDir(%s) = %q; want the path in the message", tt.abs, err)
			}
		})
	}
}

// TestReadDir_DoesNotFollowALink: a folder swapped for a symbolic link
// (here to a folder outside the vault) after its parent was listed is not
// listed through the link; the vault root itself may be a link.
func TestReadDir_DoesNotFollowALink(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("O_NOFOLLOW on directories is used on Linux")
	}
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.md"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "folder")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if entries, done, err := readDir(link, false); err == nil {
		_ = done()
		t.Fatalf("readDir(link) = %d entries; want an error", len(entries))
	}
	entries, done, err := readDir(link, true)
	if err != nil || len(entries) != 1 {
		t.Fatalf("readDir(link, follow) = %d entries, %v; want the vault root listed", len(entries), err)
	}
	if err := done(); err != nil {
		t.Fatal(err)
	}
}
