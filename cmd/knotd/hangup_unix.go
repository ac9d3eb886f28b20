//go:build unix

package main

import (
	"os"
	"syscall"
)

var hangUpSignals = []os.Signal{syscall.SIGHUP}
