package vaultfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// vault makes a vault directory and an outside directory with a secret in
// it, and opens the vault as a root.
func vault(t *testing.T) (root *os.Root, dir, outside string) {
	t.Helper()
	dir, outside = t.TempDir(), t.TempDir()
	mustWrite(t, filepath.Join(outside, "secret.md"), "secret")
	mustWrite(t, filepath.Join(dir, "note.md"), "note")
	r, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() })
	return r, dir, outside
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		if runtime.GOOS == "windows" {
			t.Skipf("symbolic links: %v", err)
		}
		t.Fatal(err)
	}
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, outside string)
		open  string
		want  string // content, or "" when an error is wanted
		err   error  // wrapped by the error; nil: any error
	}{
		{name: "regular", open: "note.md", want: "note"},
		{name: "in a folder", setup: func(t *testing.T, dir, _ string) { mustWrite(t, filepath.Join(dir, "a/b.md"), "b") }, open: "a/b.md", want: "b"},
		{name: "link to a note inside", setup: func(t *testing.T, dir, _ string) { mustSymlink(t, "note.md", filepath.Join(dir, "l.md")) }, open: "l.md", err: ErrNotRegular},
		{name: "link out of the vault", setup: func(t *testing.T, dir, out string) {
			mustSymlink(t, filepath.Join(out, "secret.md"), filepath.Join(dir, "l.md"))
		}, open: "l.md", err: ErrNotRegular},
		{name: "dangling link", setup: func(t *testing.T, dir, _ string) { mustSymlink(t, "none.md", filepath.Join(dir, "l.md")) }, open: "l.md", err: ErrNotRegular},
		{name: "folder linked out of the vault", setup: func(t *testing.T, dir, out string) { mustSymlink(t, out, filepath.Join(dir, "f")) }, open: "f/secret.md"},
		{name: "dot-dot", open: "../x.md"},
		{name: "directory", setup: func(t *testing.T, dir, _ string) { mustMkdir(t, filepath.Join(dir, "d.md")) }, open: "d.md", err: ErrNotRegular},
		{name: "missing", open: "none.md", err: fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, dir, out := vault(t)
			if tt.setup != nil {
				tt.setup(t, dir, out)
			}
			f, fi, err := Open(root, tt.open)
			if tt.want != "" {
				if err != nil {
					t.Fatalf("Open(%q) = %v; want the file", tt.open, err)
				}
				defer f.Close()
				b := make([]byte, 64)
				n, _ := f.Read(b)
				if string(b[:n]) != tt.want || fi.Size() != int64(len(tt.want)) {
					t.Errorf("Open(%q) read %q (size %d); want %q", tt.open, b[:n], fi.Size(), tt.want)
				}
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("Open(%q) succeeded; want an error", tt.open)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("Open(%q) = %v; want an error wrapping %v", tt.open, err, tt.err)
			}
		})
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
}

func TestOpen_FIFODoesNotBlock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs on Windows")
	}
	root, dir, _ := vault(t)
	if err := mkfifo(filepath.Join(dir, "p.md")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, _, err := Open(root, "p.md")
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("Open(FIFO) = %v; want ErrNotRegular naming a FIFO", err)
	}
	_, _, err = ReadFile(root, "p.md", 10)
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadFile(FIFO) = %v; want ErrNotRegular", err)
	}
	// O_WRONLY on a FIFO without a reader fails the open itself (ENXIO);
	// O_RDWR opens it. Both are refused as not regular.
	for _, flag := range []int{os.O_WRONLY, os.O_RDWR} {
		_, _, err = OpenWrite(root, "p.md", flag|os.O_APPEND|os.O_CREATE, 0o644)
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenWrite(FIFO, %#x) = %v; want ErrNotRegular", flag, err)
		}
	}
}

func TestOpenWrite(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, outside string)
		err   error // nil: success
		fail  bool
	}{
		{name: "new file"},
		{name: "existing file", setup: func(t *testing.T, dir, _ string) { mustWrite(t, filepath.Join(dir, "t.md"), "old\n") }},
		{name: "hard link", setup: func(t *testing.T, dir, out string) {
			if err := os.Link(filepath.Join(out, "secret.md"), filepath.Join(dir, "t.md")); err != nil {
				t.Skipf("link: %v", err)
			}
		}, err: ErrHardLinked, fail: true},
		{name: "link to a note inside", setup: func(t *testing.T, dir, _ string) { mustSymlink(t, "note.md", filepath.Join(dir, "t.md")) }, err: ErrNotRegular, fail: true},
		{name: "link out", setup: func(t *testing.T, dir, out string) {
			mustSymlink(t, filepath.Join(out, "secret.md"), filepath.Join(dir, "t.md"))
		}, err: ErrNotRegular, fail: true},
		{name: "dangling link inside", setup: func(t *testing.T, dir, _ string) { mustSymlink(t, "created.md", filepath.Join(dir, "t.md")) }, err: ErrNotRegular, fail: true},
		{name: "dangling link out", setup: func(t *testing.T, dir, out string) {
			mustSymlink(t, filepath.Join(out, "created.md"), filepath.Join(dir, "t.md"))
		}, err: ErrNotRegular, fail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, dir, out := vault(t)
			if tt.setup != nil {
				tt.setup(t, dir, out)
			}
			f, _, err := OpenWrite(root, "t.md", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
			if !tt.fail {
				if err != nil {
					t.Fatalf("OpenWrite = %v; want the file", err)
				}
				if _, err := f.WriteString("x\n"); err != nil {
					t.Fatal(err)
				}
				require.NoError(t, f.Close())
				return
			}
			if err == nil {
				f.Close()
				t.Fatal("OpenWrite succeeded; want an error")
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("OpenWrite = %v; want an error wrapping %v", err, tt.err)
			}
			// Nothing outside the vault, and no note inside, was touched
			// or created.
			if b, _ := os.ReadFile(filepath.Join(out, "secret.md")); string(b) != "secret" {
				t.Errorf("the file outside holds %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "note.md")); string(b) != "note" {
				t.Errorf("note.md holds %q", b)
			}
			for _, p := range []string{filepath.Join(dir, "created.md"), filepath.Join(out, "created.md")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was created through the link", p)
				}
			}
		})
	}
}

func TestReadFile_Limit(t *testing.T) {
	root, _, _ := vault(t)
	if b, _, err := ReadFile(root, "note.md", 4); err != nil || string(b) != "note" {
		t.Errorf("ReadFile(limit 4) = %q, %v; want the note", b, err)
	}
	if _, _, err := ReadFile(root, "note.md", 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile(limit 3) = %v; want ErrTooLarge", err)
	}
}

func TestReplace(t *testing.T) {
	root, dir, out := vault(t)
	require.NoError(t, os.Chmod(filepath.Join(dir, "note.md"), 0o600))
	if err := Replace(root, "note.md", []byte("new"), ReplaceOptions{}); err != nil {
		t.Fatalf("Replace = %v", err)
	}
	fi, err := os.Stat(filepath.Join(dir, "note.md"))
	require.NoError(t, err)
	if b, _ := os.ReadFile(filepath.Join(dir, "note.md")); string(b) != "new" {
		t.Errorf("after Replace the note holds %q", b)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("Replace left mode %v; want the old 0600", fi.Mode().Perm())
	}

	// A Check error replaces nothing and leaves no temporary file.
	stop := errors.New("changed")
	if err := Replace(root, "note.md", []byte("newer"), ReplaceOptions{Check: func() error { return stop }}); !errors.Is(err, stop) {
		t.Errorf("Replace with a failing Check = %v; want its error", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "note.md")); string(b) != "new" {
		t.Errorf("a refused Replace left %q", b)
	}
	assertNoTemp(t, dir)

	// A new file in a folder.
	mustMkdir(t, filepath.Join(dir, "sub"))
	if err := Replace(root, "sub/t.md", []byte("t"), ReplaceOptions{}); err != nil {
		t.Fatalf("Replace(new) = %v", err)
	}
	assertNoTemp(t, filepath.Join(dir, "sub"))

	// A symbolic link is refused, inside or out.
	mustSymlink(t, filepath.Join(out, "secret.md"), filepath.Join(dir, "l.md"))
	if err := Replace(root, "l.md", []byte("x"), ReplaceOptions{}); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Replace(link) = %v; want ErrNotRegular", err)
	}
	mustSymlink(t, out, filepath.Join(dir, "out"))
	if err := Replace(root, "out/secret.md", []byte("x"), ReplaceOptions{}); err == nil {
		t.Error("Replace through a folder linked out of the vault succeeded")
	}
	if b, _ := os.ReadFile(filepath.Join(out, "secret.md")); string(b) != "secret" {
		t.Errorf("the file outside holds %q", b)
	}
	assertNoTemp(t, out)
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.Contains(e.Name(), TempInfix) {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

func TestSyncDir(t *testing.T) {
	root, dir, _ := vault(t)
	mustMkdir(t, filepath.Join(dir, "a"))
	for _, d := range []string{"", "a", "a/"} {
		if err := SyncDir(root, d); err != nil {
			t.Errorf("SyncDir(%q) = %v", d, err)
		}
	}
	if err := SyncDir(root, "missing"); runtime.GOOS != "windows" && err == nil {
		t.Error("SyncDir(missing) = nil; want an error")
	}
}

func TestOpenDir(t *testing.T) {
	root, dir, out := vault(t)
	mustMkdir(t, filepath.Join(dir, "d"))
	d, err := OpenDir(root, "d")
	if err != nil {
		t.Fatalf("OpenDir(d) = %v", err)
	}
	require.NoError(t, d.Close())
	mustSymlink(t, "d", filepath.Join(dir, "in"))
	if _, err := OpenDir(root, "in"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenDir(link inside) = %v; want ErrNotRegular", err)
	}
	mustSymlink(t, out, filepath.Join(dir, "out"))
	if _, err := OpenDir(root, "out"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("OpenDir(link out) = %v; want ErrNotRegular", err)
	}
	if _, err := OpenDir(root, "note.md"); err == nil {
		t.Error("OpenDir(a file) succeeded")
	}
}

// TestOpenWrite_TruncatesOnlyWhatItChecked: O_TRUNC never truncates through
// a link at the name or a file with other hard links; a plain file is
// truncated.
func TestOpenWrite_TruncatesOnlyWhatItChecked(t *testing.T) {
	root, dir, out := vault(t)
	flags := os.O_WRONLY | os.O_TRUNC
	mustSymlink(t, "note.md", filepath.Join(dir, "link.md"))
	if _, _, err := OpenWrite(root, "link.md", flags, 0); err == nil {
		t.Error("OpenWrite(link, O_TRUNC) succeeded")
	}
	if err := os.Link(filepath.Join(out, "secret.md"), filepath.Join(dir, "hard.md")); err == nil {
		if _, _, err := OpenWrite(root, "hard.md", flags, 0); !errors.Is(err, ErrHardLinked) {
			t.Errorf("OpenWrite(hard link, O_TRUNC) = %v; want ErrHardLinked", err)
		}
		if b, _ := os.ReadFile(filepath.Join(out, "secret.md")); string(b) != "secret" {
			t.Errorf("the hard-linked file was truncated: %q", b)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "note.md")); string(b) != "note" {
		t.Errorf("the note a link pointed to was truncated: %q", b)
	}
	f, fi, err := OpenWrite(root, "note.md", flags, 0)
	if err != nil || fi.Size() != 0 {
		t.Fatalf("OpenWrite(note, O_TRUNC) = %v, size %d; want it truncated", err, fi.Size())
	}
	mustDo(t, f.Close())
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
