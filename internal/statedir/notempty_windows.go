//go:build windows

package statedir

import (
	"errors"

	"golang.org/x/sys/windows"
)

// isNotEmpty reports whether err says a directory is not empty.
func isNotEmpty(err error) bool { return errors.Is(err, windows.ERROR_DIR_NOT_EMPTY) }
