package vault

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/agentrun/fakeagent"
)

// TestWatch_RetriesJournaledRunOnceSpaceReturns: in watch mode, a run
// whose state write failed (a full disk) stays journaled; once the disk
// has room again knotd finishes it by itself, without a new edit or a
// restart, and without running the agent again or appending twice.
func TestWatch_RetriesJournaledRunOnceSpaceReturns(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.write("a.md", "# A\n")
	v := e.open()
	v.hooks.tick = 20 * time.Millisecond
	var mu sync.Mutex
	full := false
	v.hooks.completing = func(string) error {
		mu.Lock()
		defer mu.Unlock()
		if full {
			return fmt.Errorf("commit: %w", syscall.ENOSPC)
		}
		return nil
	}
	w := e.watch(v, WatchOptions{})
	e.write("a.md", "# A, edited\n") // a first run writes its session into it
	w.settle()
	mu.Lock()
	full = true
	mu.Unlock()
	e.write("a.md", e.read("a.md")+"\nedited again\n")
	// Not settle: while the disk is full the retries keep knotd busy.
	waitFor(t, waitTimeout, "the run to fail", func() bool { return len(w.runs()) > 1 })
	if runs := w.runs(); runs[0].Outcome != "ok" || runs[1].Outcome != "failed" {
		t.Fatalf("runs %+v; want an ok run, then a failed one", runs)
	}
	mu.Lock()
	full = false
	mu.Unlock()
	waitFor(t, waitTimeout, "the journaled run to be finished", func() bool {
		ps, err := v.store.Pendings()
		return err == nil && len(ps) == 0
	})
	w.settle()
	if n := len(e.calls()); n != 2 {
		t.Errorf("%d agent calls; want 2", n)
	}
	mustDo(t, w.stop())
	e.close(v)
	if got := e.events("a.md"); len(got) != 2 || got[0] != "Modified" || got[1] != "Modified" {
		t.Errorf("sections %v; want [Modified Modified]", got)
	}
	e.assertWhole(nil)
}
