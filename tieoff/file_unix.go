//go:build unix

package tieoff

import (
	"errors"
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
