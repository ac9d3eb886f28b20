//go:build unix

package vault

import (
	"errors"
	"syscall"
)

// isNotDir reports whether err says a path element is not a directory (a
// strand's parent directory was replaced by a file): the strand is gone.
func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
