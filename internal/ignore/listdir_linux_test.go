package ignore

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadDir_OwnInfoAgreesWithOS fails when os's lstat says something of
// a file that the walk's own FileInfo (statInfo, made from an fstatat
// relative to the open directory) does not: the mode bits os derives from
// st_mode, size, modification time, and the inode, device and status
// change time that the state's stamps take from Sys. statInfo copies
// what os does; if os changes, this is where it shows.
func TestReadDir_OwnInfoAgreesWithOS(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		mode os.FileMode
	}{
		{"plain.md", 0o644},
		{"private.md", 0o600},
		{"exec.md", 0o755},
		{"setuid.md", 0o755 | os.ModeSetuid},
		{"setgid.md", 0o755 | os.ModeSetgid},
		{"sticky.md", 0o644 | os.ModeSticky},
		{"all.md", 0o777 | os.ModeSetuid | os.ModeSetgid | os.ModeSticky},
	}
	for _, tt := range tests {
		p := filepath.Join(dir, tt.name)
		if err := os.WriteFile(p, []byte(tt.name), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, tt.mode); err != nil {
			t.Fatal(err)
		}
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
	if len(entries) != len(tests) {
		t.Fatalf("readDir = %d entries; want %d", len(entries), len(tests))
	}
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			if _, ok := e.(dirEntryAt); !ok {
				t.Fatalf("entry is a %T; want the walk's own (dirEntryAt)", e)
			}
			got, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := got.(*statInfo); !ok {
				t.Fatalf("Info() is a %T; want *statInfo", got)
			}
			want, err := os.Lstat(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if got.Mode() != want.Mode() || got.Size() != want.Size() || !got.ModTime().Equal(want.ModTime()) {
				t.Errorf("Info() = %v %d %v; os.Lstat = %v %d %v", got.Mode(), got.Size(), got.ModTime(), want.Mode(), want.Size(), want.ModTime())
			}
			id := got.Sys().(fileID)
			st := want.Sys().(*syscall.Stat_t)
			if id.Inode != uint64(st.Ino) || id.Device != uint64(st.Dev) || id.Ctime != st.Ctim.Nano() { // their types differ between architectures
				t.Errorf("Sys() = %+v; os.Lstat says inode %d, device %d, ctime %d", id, st.Ino, st.Dev, st.Ctim.Nano())
			}
		})
	}
}
