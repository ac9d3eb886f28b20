//go:build unix

package transcript

import (
	"syscall"
)

// openFlags are added to every open of a transcript: never follow a
// symbolic link at a transcript's name, never block on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// removeWhileLocked: Unix can remove a file that is open, so Prune removes
// a transcript while it holds the lock, leaving no moment for a Recorder
// to take it.
const removeWhileLocked = true
