//go:build !linux

package proc

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

func Supported() error { return errUnsupported }

func Memory(int) (Mem, error)               { return Mem{}, errUnsupported }
func CPUTime(int) (time.Duration, error)    { return 0, errUnsupported }
func SchedTime(int) (time.Duration, error)  { return 0, errUnsupported }
func MaxRSS(*os.ProcessState) int64         { return 0 }
func InotifyWatches(int) (int, error)       { return 0, errUnsupported }
func NewGroup() *syscall.SysProcAttr        { return nil }
func SignalGroup(int, syscall.Signal) error { return errUnsupported }
func RaiseFileLimit() error                 { return nil }
