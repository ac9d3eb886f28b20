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
	"time"

	"github.com/knotd/knotd/internal/vaultfs"
)

const (
	tieName   = "notes/n.tieoff.md"
	stCopy    = "notes/n.tieoff.sync-conflict-20261123-120000-ABCDEFG.md"
	dropCopy  = "notes/n.tieoff (Ada's conflicted copy 2026-11-23).md"
	notesText = "My notes.\n\n"
)

// mergeVault makes a vault with a notes folder holding the tie-off (if
// original is not nil) and its conflict copy.
func mergeVault(t *testing.T, original, conflict []byte, copyName string) (*os.Root, string) {
	t.Helper()
	root, dir := testVault(t)
	if err := os.Mkdir(filepath.Join(dir, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if original != nil {
		if err := os.WriteFile(filepath.Join(dir, tieName), original, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, tieName), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(copyName)), conflict, 0o644); err != nil {
		t.Fatal(err)
	}
	return root, dir
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// TestMergeFile merges conflict copies into tie-offs on disk.
func TestMergeFile(t *testing.T) {
	tests := []struct {
		name           string
		original, copy []byte // original nil: no tie-off
		copyName       string
		want           []byte
		added          int
		removed        bool
	}{
		{name: "Syncthing copy with other runs", original: tieOff(t, 0, 2), copy: tieOff(t, 0, 1, 3), copyName: stCopy, want: tieOff(t, 0, 1, 2, 3), added: 2, removed: true},
		{name: "Dropbox copy", original: tieOff(t, 1), copy: tieOff(t, 0), copyName: dropCopy, want: tieOff(t, 0, 1), added: 1, removed: true},
		{name: "copy holds nothing new", original: tieOff(t, 0, 1), copy: tieOff(t, 0), copyName: stCopy, want: tieOff(t, 0, 1), removed: true},
		{name: "copy with words it cannot place", original: tieOff(t, 0), copy: append([]byte(notesText), tieOff(t, 1)...), copyName: stCopy, want: tieOff(t, 0, 1), added: 1},
		{name: "no tie-off", copy: append([]byte(notesText), tieOff(t, 1)...), copyName: dropCopy, want: append([]byte(notesText), tieOff(t, 1)...), added: 1, removed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, dir := mergeVault(t, tt.original, tt.copy, tt.copyName)
			rep, err := MergeFile(root, tieName, tt.copyName)
			if err != nil {
				t.Fatalf("MergeFile = %v", err)
			}
			if rep.Added != tt.added || rep.Removed != tt.removed || rep.Complete() != (tt.removed) {
				t.Errorf("report = %+v; want added %d, removed %v", rep, tt.added, tt.removed)
			}
			path := filepath.Join(dir, tieName)
			if got := mustReadFile(t, path); !bytes.Equal(got, tt.want) {
				t.Errorf("tie-off after MergeFile =\n%s\nwant\n%s", got, tt.want)
			}
			copyPath := filepath.Join(dir, filepath.FromSlash(tt.copyName))
			if exists(t, copyPath) == tt.removed {
				t.Errorf("copy exists = %v; want %v", !tt.removed, !tt.removed)
			}
			if !tt.removed {
				if got := mustReadFile(t, copyPath); !bytes.Equal(got, tt.copy) {
					t.Errorf("the kept copy changed: %q", got)
				}
			}
			if tt.original != nil && runtime.GOOS != "windows" {
				if fi := mustStat(t, path); fi.Mode().Perm() != 0o640 {
					t.Errorf("tie-off mode = %v; want 0640 kept", fi.Mode().Perm())
				}
			}
			assertOnly(t, filepath.Join(dir, "notes"), "n.tieoff.md", filepath.Base(tt.copyName))
			// Merging the kept copy again adds nothing.
			if !tt.removed {
				before := mustReadFile(t, path)
				rep, err := MergeFile(root, tieName, tt.copyName)
				if err != nil || rep.Added != 0 || rep.Removed || !bytes.Equal(mustReadFile(t, path), before) {
					t.Errorf("second MergeFile = %+v, %v; want nothing added", rep, err)
				}
			}
		})
	}
}

// assertOnly fails if dir holds other names than the given ones (a
// temporary file left behind).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	for name := range listDir(t, dir) {
		ok := false
		for _, n := range names {
			ok = ok || n == name
		}
		if !ok {
			t.Errorf("%s left in %s", name, dir)
		}
	}
}

// TestMergeFile_HardLinked: a hard-linked tie-off is replaced, not written
// through; the other name keeps the old content.
func TestMergeFile_HardLinked(t *testing.T) {
	root, dir := mergeVault(t, tieOff(t, 0), tieOff(t, 1), stCopy)
	other := filepath.Join(dir, "other.md")
	if err := os.Link(filepath.Join(dir, tieName), other); err != nil {
		t.Skipf("hard link: %v", err)
	}
	rep, err := MergeFile(root, tieName, stCopy)
	if err != nil || !rep.Removed {
		t.Fatalf("MergeFile = %+v, %v", rep, err)
	}
	if got := mustReadFile(t, filepath.Join(dir, tieName)); !bytes.Equal(got, tieOff(t, 0, 1)) {
		t.Errorf("tie-off = %q", got)
	}
	if got := mustReadFile(t, other); !bytes.Equal(got, tieOff(t, 0)) {
		t.Errorf("the other link changed: %q", got)
	}
}

// TestMergeFile_Refuses: links, FIFOs, names out of the vault and files
// too large are refused, and neither file is changed or removed.
func TestMergeFile_Refuses(t *testing.T) {
	orig, cp := tieOff(t, 0), tieOff(t, 1)
	tests := []struct {
		name          string
		setup         func(t *testing.T, dir, outside string)
		tie, copyName string
		err           error // nil: any error
	}{
		{name: "copy is a link to a note", setup: func(t *testing.T, dir, _ string) {
			mustRemove(t, filepath.Join(dir, stCopy))
			symlink(t, "n.tieoff.md", filepath.Join(dir, stCopy))
		}, err: ErrNotRegular},
		{name: "tie-off is a link to a note", setup: func(t *testing.T, dir, _ string) {
			writeFile(t, filepath.Join(dir, "notes/note.md"), noteText)
			mustRemove(t, filepath.Join(dir, tieName))
			symlink(t, "note.md", filepath.Join(dir, tieName))
		}, err: ErrNotRegular},
		{name: "tie-off is a dangling link", setup: func(t *testing.T, dir, _ string) {
			mustRemove(t, filepath.Join(dir, tieName))
			symlink(t, "none.md", filepath.Join(dir, tieName))
		}, err: ErrNotRegular},
		{name: "copy is a FIFO", setup: func(t *testing.T, dir, _ string) {
			mustRemove(t, filepath.Join(dir, stCopy))
			if err := mkfifo(filepath.Join(dir, stCopy)); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, err: ErrNotRegular},
		{name: "tie-off is a FIFO", setup: func(t *testing.T, dir, _ string) {
			mustRemove(t, filepath.Join(dir, tieName))
			if err := mkfifo(filepath.Join(dir, tieName)); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, err: ErrNotRegular},
		{name: "folder linked out of the vault", setup: func(t *testing.T, dir, out string) {
			writeFile(t, filepath.Join(out, "n.tieoff.md"), string(orig))
			symlink(t, out, filepath.Join(dir, "out"))
		}, tie: "out/n.tieoff.md"},
		{name: "copy out of the vault", copyName: "../x.tieoff.sync-conflict-20261123-120000-ABCDEFG.md"},
		{name: "the copy is the tie-off", copyName: tieName},
		{name: "copy too large", setup: func(t *testing.T, dir, _ string) {
			if err := os.Truncate(filepath.Join(dir, stCopy), maxReadSize+1); err != nil {
				t.Fatal(err)
			}
		}, err: ErrTooLarge},
		{name: "tie-off too large", setup: func(t *testing.T, dir, _ string) {
			if err := os.Truncate(filepath.Join(dir, tieName), maxReadSize+1); err != nil {
				t.Fatal(err)
			}
		}, err: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, dir := mergeVault(t, orig, cp, stCopy)
			outside := t.TempDir()
			if tt.setup != nil {
				tt.setup(t, dir, outside)
			}
			tie, copyName := tieName, stCopy
			if tt.tie != "" {
				tie = tt.tie
			}
			if tt.copyName != "" {
				copyName = tt.copyName
			}
			notes, out := snapshot(t, filepath.Join(dir, "notes")), snapshot(t, outside)
			done := make(chan struct{})
			var rep MergeReport
			var err error
			go func() { rep, err = MergeFile(root, tie, copyName); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("MergeFile blocks")
			}
			if err == nil || rep.Removed {
				t.Fatalf("MergeFile = %+v, %v; want an error", rep, err)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("MergeFile = %v; want an error wrapping %v", err, tt.err)
			}
			if after := snapshot(t, filepath.Join(dir, "notes")); after != notes {
				t.Errorf("the notes folder changed:\n%s\nwas\n%s", after, notes)
			}
			if after := snapshot(t, outside); after != out {
				t.Errorf("the folder outside the vault changed:\n%s\nwas\n%s", after, out)
			}
		})
	}
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// snapshot describes the entries of dir: name, type, size and, for small
// regular files, content; it does not open anything else.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(e.Name() + " " + fi.Mode().String())
		if fi.Mode().IsRegular() && fi.Size() < 1<<20 {
			b.Write(mustReadFile(t, filepath.Join(dir, e.Name())))
		} else {
			b.WriteString(" " + fi.ModTime().String())
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestMergeFile_Changed: a tie-off or copy that changed since it was read
// is not replaced or removed.
func TestMergeFile_Changed(t *testing.T) {
	root, dir := mergeVault(t, tieOff(t, 0), tieOff(t, 1), stCopy)
	_, fi, err := vaultfs.ReadFile(root, tieName, maxReadSize)
	if err != nil {
		t.Fatal(err)
	}
	if err := unchanged(root, tieName, fi); err != nil {
		t.Errorf("unchanged(untouched file) = %v", err)
	}
	writeFile(t, filepath.Join(dir, tieName), string(tieOff(t, 0, 2)))
	if err := unchanged(root, tieName, fi); !errors.Is(err, errChanged) {
		t.Errorf("unchanged(rewritten file) = %v; want errChanged", err)
	}
	mustRemove(t, filepath.Join(dir, tieName))
	if err := unchanged(root, tieName, fi); !errors.Is(err, errChanged) {
		t.Errorf("unchanged(removed file) = %v; want errChanged", err)
	}
}
