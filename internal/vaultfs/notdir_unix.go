//go:build unix

package vaultfs

import (
	"errors"
	"syscall"
)

// IsNotDir reports whether err says a path element is not a directory (a
// folder on the way was replaced by a file): what lies below it is gone.
func IsNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
