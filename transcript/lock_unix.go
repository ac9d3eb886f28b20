//go:build unix

package transcript

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFlags are added to every open of a transcript: never follow a
// symbolic link at a transcript's name, never block on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// removeWhileLocked: Unix can remove a file that is open, so Prune removes
// a transcript while it holds the lock, leaving no moment for a Recorder
// to take it.
const removeWhileLocked = true

// errLocked is lockFile's error when another open file holds the lock.
var errLocked = errors.New("locked")

// lockFile takes an exclusive flock on f without waiting. flock locks belong
// to the open file description, so two opens conflict even within one
// process, and the kernel drops the lock when its holder dies.
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return errLocked
		default:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
	}
}

// unlockFile releases the lock on f.
func unlockFile(f *os.File) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_UN); err != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}

// lockUnsupported reports whether err says the file system has no advisory
// locks.
func lockUnsupported(err error) bool {
	return errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOLCK) || errors.Is(err, unix.EINVAL)
}

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
