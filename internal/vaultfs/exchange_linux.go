package vaultfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the files named a and b in the directory d, in one step
// (renameat2 RENAME_EXCHANGE). It reports false, and does nothing, where
// the file system cannot (some network and FUSE file systems).
func exchange(d *os.File, a, b string) (bool, error) {
	fd := int(d.Fd())
	for {
		err := unix.Renameat2(fd, a, fd, b, unix.RENAME_EXCHANGE)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EOPNOTSUPP):
			return false, nil
		}
		return false, &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
}
