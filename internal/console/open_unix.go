//go:build unix

package console

import "syscall"

// openFlags: never follow a symbolic link at a transcript's name, never
// block on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
