//go:build !linux

package main

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"time"
)

// errUnsupported says why the harness does not run here: it reads /proc
// and getrusage figures that only Linux provides in this form.
var errUnsupported = errors.New("knotbench measures on Linux only (it reads /proc); " + runtime.GOOS + " is not supported")

func supported() error { return errUnsupported }

func memory(int) (memStat, error)           { return memStat{}, errUnsupported }
func cpuTime(int) (time.Duration, error)    { return 0, errUnsupported }
func schedTime(int) (time.Duration, error)  { return 0, errUnsupported }
func maxRSS(*os.ProcessState) int64         { return 0 }
func inotifyWatches(int) (int, error)       { return 0, errUnsupported }
func newGroup() *syscall.SysProcAttr        { return nil }
func signalGroup(int, syscall.Signal) error { return errUnsupported }
func raiseFileLimit() error                 { return nil }
