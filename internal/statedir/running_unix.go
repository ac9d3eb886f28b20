//go:build unix

package statedir

import (
	"errors"
	"syscall"
)

// processRunning reports whether a process with this pid exists (signal 0
// checks without sending anything; EPERM means it exists as another
// user's).
func processRunning(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
