//go:build !unix

package main

import (
	"errors"
	"os"
)

// canSignal: without Unix signals, scenarios that kill, stop or restart
// knotd are skipped.
const canSignal = false

func terminate(*os.Process) error { return errors.New("no SIGTERM on this system") }
