//go:build unix

package vaultfs

import (
	"errors"
	"syscall"
)

// IsNotDir reports whether err says a path element is not a directory (a
// strand's parent directory was replaced by a file): the strand is gone.
func IsNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
