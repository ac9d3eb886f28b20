package vaultfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchange swaps the files named a and b in the directory d, in one step
// (renameatx_np RENAME_SWAP). It reports false, and does nothing, where
// the file system cannot.
func exchange(d *os.File, a, b string) (bool, error) {
	fd := int(d.Fd())
	err := unix.RenameatxNp(fd, a, fd, b, unix.RENAME_SWAP)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.ENOSYS):
		return false, nil
	}
	return false, &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
}
