package conversation

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// standInTB is the testing.TB that agenttest's API stand-ins and CLI
// locators are given when the bench, which is no test, uses them. They
// call only Helper, Cleanup, Logf, Fatalf and Skipf; the embedded TB is
// nil, so any other method panics, which would show at once.
//
// Fatalf and Skipf stop the calling goroutine by panicking with a
// *tbStop; the scenario recovers it (catchTB) into an error. They are
// called only on the scenario's own goroutine (the stand-ins' handler
// goroutines only log).
type standInTB struct {
	testing.TB

	logf func(format string, args ...any)

	mu       sync.Mutex
	cleanups []func()
}

// tbStop is what Fatalf and Skipf panic with.
type tbStop struct {
	skip bool
	msg  string
}

func newStandInTB(logf func(format string, args ...any)) *standInTB {
	return &standInTB{logf: logf}
}

func (t *standInTB) Helper() {}

func (t *standInTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *standInTB) Logf(format string, args ...any) { t.logf(format, args...) }

func (t *standInTB) Fatalf(format string, args ...any) {
	panic(&tbStop{msg: fmt.Sprintf(format, args...)})
}

func (t *standInTB) Skipf(format string, args ...any) {
	panic(&tbStop{skip: true, msg: fmt.Sprintf(format, args...)})
}

// close runs the cleanups, last registered first (the stand-ins' Close).
func (t *standInTB) close() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

// errSkipped wraps the message of a Skipf: the thing measured is not
// available here (a CLI that cannot be installed).
var errSkipped = errors.New("skipped")

// catchTB turns a Fatalf or Skipf of the standInTB on this goroutine into
// *err (errSkipped for a skip); other panics go on. Defer it.
func catchTB(err *error) {
	r := recover()
	if r == nil {
		return
	}
	stop, ok := r.(*tbStop)
	if !ok {
		panic(r)
	}
	if stop.skip {
		*err = fmt.Errorf("%w: %s", errSkipped, stop.msg)
		return
	}
	*err = errors.New(stop.msg)
}
