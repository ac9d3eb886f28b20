//go:build unix

package vault

import (
	"errors"
	"syscall"
)

// openFlags make opening a strand refuse a symbolic link and not block on
// a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// isNotDir reports whether err says a path element is not a directory (a
// strand's parent directory was replaced by a file): the strand is gone.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
