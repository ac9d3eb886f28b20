package tieoff

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/vaultfs"
)

// The tests in this file hold the file functions to the vault's rules: a
// tie-off is reached only through the vault root, never through a symbolic
// link at its name, never by blocking on a FIFO, and a hard-linked one is
// never written through.

const noteText = "# A note\n\nIts words must not change.\n"

// callAll calls every function that opens a tie-off on name and returns
// their errors by function name. Each call must return within a few
// seconds: a FIFO must not block.
func callAll(t *testing.T, root *os.Root, name string) map[string]error {
	t.Helper()
	s := mkSection(0, strand.Modified, "n.md", "A reply.")
	calls := map[string]func() error{
		"Append":  func() error { _, err := Append(root, name, s); return err },
		"Replace": func() error { return Replace(root, name, s) },
		"Read":    func() error { _, _, err := Read(root, name); return err },
		"Tail":    func() error { _, err := Tail(root, name, 3, 0); return err },
		"HasRun":  func() error { _, err := HasRun(root, name, s.RunID, 0); return err },
	}
	errs := make(map[string]error)
	for _, fn := range slices.Sorted(maps.Keys(calls)) {
		done := make(chan error, 1)
		go func() { done <- calls[fn]() }()
		select {
		case err := <-done:
			errs[fn] = err
		case <-time.After(5 * time.Second):
			t.Fatalf("%s(%s) blocks", fn, name)
		}
	}
	return errs
}

// symlink makes a symbolic link, or skips the test where the platform or
// the user may not make one.
func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		if runtime.GOOS == "windows" {
			t.Skipf("symbolic links: %v", err)
		}
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// listDir returns the names in dir with their contents.
func listDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(b)
	}
	return out
}

// TestFiles_SymlinkInsideVault: a tie-off that is a symbolic link to a
// note inside the vault (relative or absolute, or dangling) is refused by
// every function, and neither the note nor the link changes.
func TestFiles_SymlinkInsideVault(t *testing.T) {
	for _, tc := range []struct{ name, target string }{
		{"relative", "note.md"},
		{"absolute", ""},
		{"into a folder", "sub/deep.md"},
		{"dangling", "created.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dir := testVault(t)
			writeFile(t, filepath.Join(dir, "note.md"), noteText)
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "sub", "deep.md"), noteText)
			target := tc.target
			if target == "" {
				target = filepath.Join(dir, "note.md")
			}
			link := filepath.Join(dir, "n.tieoff.md")
			symlink(t, target, link)
			before := listDir(t, dir)

			for fn, err := range callAll(t, root, "n.tieoff.md") {
				if !errors.Is(err, ErrNotRegular) || !errors.Is(err, vaultfs.ErrNotRegular) {
					t.Errorf("%s(symbolic link to %s) = %v; want ErrNotRegular", fn, tc.target, err)
				}
			}
			if after := listDir(t, dir); !equalMaps(before, after) {
				t.Errorf("the vault changed: %q, was %q", after, before)
			}
			if b := mustReadFile(t, filepath.Join(dir, "sub", "deep.md")); string(b) != noteText {
				t.Errorf("sub/deep.md holds %q", b)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("the link is no longer a link: %v, %v", fi, err)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestFiles_LinkOutOfVault: a tie-off in a folder that is a symbolic link
// out of the vault, or a tie-off linked to a file outside, is refused by
// every function; nothing outside is created, read into a result or
// written.
func TestFiles_LinkOutOfVault(t *testing.T) {
	root, dir := testVault(t)
	outside := t.TempDir()
	existing := string(mustFormat(t, mkSection(0, strand.Created, "n.md", "Outside words.")))
	writeFile(t, filepath.Join(outside, "n.tieoff.md"), existing)
	symlink(t, outside, filepath.Join(dir, "out"))
	symlink(t, filepath.Join(outside, "n.tieoff.md"), filepath.Join(dir, "l.tieoff.md"))
	symlink(t, filepath.Join(outside, "none.tieoff.md"), filepath.Join(dir, "dangling.tieoff.md"))
	before := listDir(t, outside)

	for _, name := range []string{"out/n.tieoff.md", "out/new.tieoff.md", "l.tieoff.md", "dangling.tieoff.md"} {
		for fn, err := range callAll(t, root, name) {
			if err == nil {
				t.Errorf("%s(%s) succeeded; want an error", fn, name)
			}
		}
	}
	if after := listDir(t, outside); !equalMaps(before, after) {
		t.Errorf("the folder outside the vault changed: %q, was %q", after, before)
	}
	// A link at the tie-off's own name is named as such.
	for fn, err := range callAll(t, root, "l.tieoff.md") {
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s(link out) = %v; want ErrNotRegular", fn, err)
		}
	}
}

// TestFiles_HardLinked: Append never writes through a tie-off with other
// hard links (a cp -al snapshot, a planted link): it replaces the tie-off
// by a copy with the new section, and the other name keeps the old
// content; the next append is a plain append again. Replace replaces it by
// a rename likewise; reading is allowed.
func TestFiles_HardLinked(t *testing.T) {
	root, dir := testVault(t)
	const name = "n.tieoff.md"
	path := filepath.Join(dir, name)
	first := mkSection(0, strand.Created, "n.md", "First reply.")
	mustAppend(t, root, name, first)
	old := mustReadFile(t, path)
	for _, other := range []string{filepath.Join(dir, "note.md"), filepath.Join(t.TempDir(), "outside.md")} {
		t.Run(filepath.Base(other), func(t *testing.T) {
			if err := os.Link(path, other); err != nil {
				t.Skipf("hard link: %v", err)
			}
			defer os.Remove(other)
			if secs := mustRead(t, root, name); len(secs) != 1 {
				t.Errorf("Read(hard-linked) = %d sections; want 1", len(secs))
			}
			if ok, err := HasRun(root, name, first.RunID, 0); !ok || err != nil {
				t.Errorf("HasRun(hard-linked) = %v, %v; want true", ok, err)
			}
			if w, err := Tail(root, name, 1, 0); err != nil || len(w.Sections) != 1 {
				t.Errorf("Tail(hard-linked) = %d sections, %v", len(w.Sections), err)
			}
			s := mkSection(1, strand.Modified, "n.md", "Second reply.")
			off, err := Append(root, name, s)
			if err != nil {
				t.Fatalf("Append(hard-linked) = %v", err)
			}
			if b := mustReadFile(t, other); !bytes.Equal(b, old) {
				t.Errorf("the other link changed: %q", b)
			}
			secs := mustRead(t, root, name)
			if len(secs) != 2 || secs[1].RunID != s.RunID || secs[1].Offset != off {
				t.Errorf("after the append the tie-off holds %d sections (offset %d, want %d)", len(secs), secs[len(secs)-1].Offset, off)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := links(fi); n != 1 {
				t.Errorf("the tie-off has %d links after the append; want its own copy", n)
			}
			mustAppend(t, root, name, mkSection(2, strand.Modified, "n.md", "Third reply."))
			// Back to the first section alone, for the next case.
			if err := os.WriteFile(path, old, 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}

	// Replace: the tie-off's name gets a new file; the other keeps the old.
	other := filepath.Join(dir, "note.md")
	if err := os.Link(path, other); err != nil {
		t.Skipf("hard link: %v", err)
	}
	s := mkSection(2, strand.Modified, "n.md", "Only this.")
	if err := Replace(root, name, s); err != nil {
		t.Fatalf("Replace(hard-linked) = %v", err)
	}
	if b := mustReadFile(t, path); !bytes.Equal(b, mustFormat(t, s)) {
		t.Errorf("after Replace the tie-off holds %q", b)
	}
	if b := mustReadFile(t, other); !bytes.Equal(b, old) {
		t.Errorf("Replace wrote through the hard link: %q", b)
	}
}

// TestFiles_FIFO: a FIFO named like a tie-off blocks no function and is
// refused as not regular.
func TestFiles_FIFO(t *testing.T) {
	root, dir := testVault(t)
	if err := mkfifo(filepath.Join(dir, "p.tieoff.md")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// A link to it must not block either.
	symlink(t, "p.tieoff.md", filepath.Join(dir, "l.tieoff.md"))
	for _, name := range []string{"p.tieoff.md", "l.tieoff.md"} {
		for fn, err := range callAll(t, root, name) {
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s(%s) = %v; want ErrNotRegular", fn, name, err)
			}
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "p.tieoff.md")); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v, %v", fi, err)
	}
}

// TestRead_TooLarge: Read refuses a tie-off over maxReadSize without
// reading it; Tail still returns its newest sections, reading at most
// maxReadSize+1 bytes.
func TestRead_TooLarge(t *testing.T) {
	root, dir := testVault(t)
	const name = "big.tieoff.md"
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: a hole of maxReadSize bytes, then a section.
	s := mkSection(0, strand.Modified, "n.md", "The newest reply.")
	sec := append([]byte("\n"+separator), mustFormat(t, s)...)
	if _, err := f.WriteAt(sec, maxReadSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, err = Read(root, name)
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, vaultfs.ErrTooLarge) {
		t.Fatalf("Read(%d bytes) = %v; want ErrTooLarge", maxReadSize+len(sec), err)
	}
	if testing.Short() {
		return
	}
	for _, budget := range []int{0, maxReadSize + 100} {
		w, err := Tail(root, name, 0, budget)
		if err != nil {
			t.Fatalf("Tail(no count, budget %d) = %v", budget, err)
		}
		if len(w.Sections) != 1 || w.Sections[0].Body != "The newest reply.\n" || w.BytesRead > maxReadSize+1 {
			t.Errorf("Tail(no count, budget %d) = %d sections after reading %d bytes; want the newest within maxReadSize+1", budget, len(w.Sections), w.BytesRead)
		}
	}
}
