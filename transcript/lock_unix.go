//go:build unix

package transcript

import (
	"errors"
	"os"
	"syscall"
)

// openFlags are added to every open of a transcript: never follow a
// symbolic link at a transcript's name, never block on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// removeWhileLocked: Unix can remove a file that is open, so Prune removes
// a transcript while it holds the lock, leaving no moment for a Recorder
// to take it.
const removeWhileLocked = true

// syncDir makes a new name in dir durable. File systems that cannot sync a
// directory (EINVAL, ENOTSUP) are not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
