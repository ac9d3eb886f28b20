//go:build unix

package main

import (
	"os"
	"syscall"
)

// canSignal: scenarios may kill, stop and restart knotd.
const canSignal = true

// terminate asks a watching knotd to stop, as a service manager does.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
