//go:build unix

package watcher

import (
	"net"
	"syscall"
	"testing"
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
