//go:build unix

package ignore

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// addSpecialFiles adds a FIFO and a socket named like strands to mk.
func addSpecialFiles(t *testing.T, mk map[string]func(p string) error) {
	mk["fifo.md"] = func(p string) error { return syscall.Mkfifo(p, 0o600) }
	mk["sock.md"] = func(p string) error {
		l, err := net.Listen("unix", p)
		if err != nil {
			return err
		}
		t.Cleanup(func() { _ = l.Close() })
		return nil
	}
}

// TestLoad_IgnoreFilesAreSomeoneElsesInput: an ignore file that is a FIFO
// does not block Load, and one that is a symbolic link (here to a file
// outside the vault) is not read.
func TestLoad_IgnoreFilesAreSomeoneElsesInput(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, ".gitignore"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	secret := filepath.Join(outside, "ignore")
	if err := os.WriteFile(secret, []byte("*.md\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, ".knotignore")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	r := &Rules{}
	go func() { done <- r.Load(root, "") }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("Load = %v; want errors naming the FIFO and the link", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Load blocked on a FIFO named .gitignore")
	}
	if r.Ignored("note.md", false) {
		t.Error("the linked ignore file outside the vault was read")
	}
}
