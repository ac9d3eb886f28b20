//go:build unix

package statedir

import (
	"errors"
	"syscall"
)

// isNotEmpty reports whether err says a directory is not empty.
func isNotEmpty(err error) bool {
	return errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST)
}
