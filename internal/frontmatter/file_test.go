package frontmatter

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/knotd/knotd/internal/vaultfs"
)

func writeTestFile(t *testing.T, path string, data []byte, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // not subject to the umask
		t.Fatal(err)
	}
}

// dirNames lists the names in dir, to show that no temporary file is left.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// inRoot calls a writer on the file at path with a root opened on its
// directory, as the vault calls it with the vault's root.
// The guard is settled at once: nobody writes into these files.
func inRoot(write func(root *os.Root, name string, original, updated []byte) (*vaultfs.Guard, error)) func(path string, original, updated []byte) error {
	return func(path string, original, updated []byte) error {
		root, err := os.OpenRoot(filepath.Dir(path))
		if err != nil {
			return err
		}
		defer root.Close()
		g, err := write(root, filepath.Base(path), original, updated)
		if _, serr := g.Settle(); err == nil {
			err = serr
		}
		return err
	}
}

// writeFile is WriteFile on the file at path.
var writeFile = inRoot(WriteFile)

// writers are WriteFile and WriteFileDeferred, which differ only in
// whether they sync the directory at the end.
var writers = []struct {
	name  string
	write func(path string, original, updated []byte) error
}{
	{"WriteFile", writeFile},
	{"WriteFileDeferred", inRoot(WriteFileDeferred)},
}

func TestWriteFile_ReplacesAndKeepsPermissions(t *testing.T) {
	for _, wr := range writers {
		for _, perm := range []fs.FileMode{0o600, 0o640, 0o444} {
			t.Run(wr.name+"/"+perm.String(), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "note.md")
				original := []byte("body\n")
				writeTestFile(t, path, original, perm)
				updated, err := SetSession(original, testID)
				if err != nil {
					t.Fatal(err)
				}
				if err := wr.write(path, original, updated); err != nil {
					t.Fatalf("WriteFile(%s) error: %v", path, err)
				}
				got, err := os.ReadFile(path)
				if err != nil || string(got) != string(updated) {
					t.Errorf("after WriteFile the file holds %q, %v; want %q", got, err, updated)
				}
				info, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if runtime.GOOS != "windows" && info.Mode().Perm() != perm {
					t.Errorf("after WriteFile the mode is %v; want %v", info.Mode().Perm(), perm)
				}
				if names := dirNames(t, dir); !slices.Equal(names, []string{"note.md"}) {
					t.Errorf("after WriteFile the directory holds %q; want only note.md", names)
				}
			})
		}
	}
}

func TestWriteFile_RefusesChangedFile(t *testing.T) {
	original := []byte("---\ntitle: t\n---\nbody\n")
	updated := []byte("---\ntitle: t\nknot_session: " + testID + "\n---\nbody\n")
	tests := []struct {
		name   string
		change func(t *testing.T, path string) // what the user did after knotd read the file
		want   string                          // the file's content afterwards; "" for gone
	}{
		// Same size, other bytes: only the comparison made after the
		// temporary file is written can tell, and that file must go.
		{"edited_same_size", func(t *testing.T, path string) {
			writeTestFile(t, path, []byte("---\ntitle: T\n---\nbody\n"), 0o644)
		}, "---\ntitle: T\n---\nbody\n"},
		{"edited_longer", func(t *testing.T, path string) {
			writeTestFile(t, path, []byte("---\ntitle: t\n---\nbody\nmore\n"), 0o644)
		}, "---\ntitle: t\n---\nbody\nmore\n"},
		{"deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, ""},
	}
	for _, wr := range writers {
		for _, tt := range tests {
			t.Run(wr.name+"/"+tt.name, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "note.md")
				writeTestFile(t, path, original, 0o644)
				tt.change(t, path)
				err := wr.write(path, original, updated)
				if !errors.Is(err, ErrChanged) {
					t.Fatalf("WriteFile after the file changed = %v; want ErrChanged", err)
				}
				got, rerr := os.ReadFile(path)
				switch {
				case tt.want == "" && !errors.Is(rerr, fs.ErrNotExist):
					t.Errorf("WriteFile recreated a deleted file: %q, %v", got, rerr)
				case tt.want != "" && string(got) != tt.want:
					t.Errorf("WriteFile touched a changed file: it holds %q, %v; want %q", got, rerr, tt.want)
				}
				want := []string{"note.md"}
				if tt.want == "" {
					want = nil
				}
				if names := dirNames(t, dir); !slices.Equal(names, want) {
					t.Errorf("after a refused WriteFile the directory holds %q; want %q", names, want)
				}
			})
		}
	}
}

func TestWriteFile_RefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "dir.md")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(sub, nil, []byte("x")); err == nil || errors.Is(err, ErrChanged) {
		t.Errorf("WriteFile(a directory) = %v; want a not-regular error", err)
	}
	if runtime.GOOS == "windows" {
		return
	}
	target := filepath.Join(dir, "target.md")
	writeTestFile(t, target, []byte("x"), 0o644)
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(link, []byte("x"), []byte("y")); err == nil {
		t.Errorf("WriteFile(a symlink) succeeded; want an error")
	}
	if got, _ := os.ReadFile(target); string(got) != "x" {
		t.Errorf("WriteFile through a symlink changed its target to %q", got)
	}
}

func TestWriteFile_CleansUpWhenDirectoryIsReadOnly(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs a directory the test cannot write to (not root, not Windows)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "note.md")
	writeTestFile(t, path, []byte("a"), 0o644)
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	if err := writeFile(path, []byte("a"), []byte("b")); err == nil {
		t.Errorf("WriteFile in a read-only directory succeeded")
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"note.md"}) {
		t.Errorf("the directory holds %q", names)
	}
}

func TestWriteFile_NothingToWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "note.md")
	writeTestFile(t, path, []byte("user's newer edit"), 0o644)
	if err := writeFile(path, []byte("same"), []byte("same")); err != nil {
		t.Fatalf("WriteFile with nothing to change = %v; want nil", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "user's newer edit" {
		t.Errorf("WriteFile with nothing to change wrote %q", got)
	}
}

// TestWriteFile_StaysInTheVault: a note whose folder is a symbolic link out
// of the vault is never written through it, and nothing is created
// outside.
func TestWriteFile_StaysInTheVault(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links")
	}
	vault, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "note.md")
	writeTestFile(t, target, []byte("a"), 0o644)
	if err := os.Symlink(outside, filepath.Join(vault, "folder")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(vault)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := WriteFile(root, "folder/note.md", []byte("a"), []byte("b")); err == nil {
		t.Error("WriteFile through a folder linked out of the vault succeeded")
	}
	if got, _ := os.ReadFile(target); string(got) != "a" {
		t.Errorf("the note outside the vault holds %q", got)
	}
	if names := dirNames(t, outside); !slices.Equal(names, []string{"note.md"}) {
		t.Errorf("the folder outside holds %q", names)
	}
}
