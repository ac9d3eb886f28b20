//go:build unix

package tieoff

import (
	"errors"
	"os"
	"syscall"
)

// openFlags are added to every open: never follow a symbolic link at the
// tie-off's own name (a link could point out of the vault), and never
// block on a FIFO that someone named like a tie-off.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// checkNotLink is done by O_NOFOLLOW on this platform.
func checkNotLink(string) error { return nil }

// isLinkErr reports whether an open with O_NOFOLLOW failed because the
// name is a symbolic link (ELOOP; EMLINK on FreeBSD).
func isLinkErr(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}

// syncDir makes a rename in dir durable. File systems that cannot sync a
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
