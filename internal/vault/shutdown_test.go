package vault

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/testutil"
)

// TestWatch_StopLetsRunningAgentFinish: knotd is told to stop while an
// agent runs; the agent finishes within the grace period, and its reply
// is appended and committed before Watch returns.
func TestWatch_StopLetsRunningAgentFinish(t *testing.T) {
	e := newEnv(t)
	e.grace = waitTimeout
	e.useAgent("", gateBehaviour)
	e.write("note.md", "# Note\n")
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("note.md", "# Note\n\nchanged\n")
	e.waitCalls(1)
	w.cancel() // SIGINT
	e.release(1)
	if err := w.stop(); err != nil {
		t.Fatalf("Watch = %v; want nil after a clean stop", err)
	}
	if got := e.events("note.md"); !slices.Equal(got, []string{"Modified"}) {
		t.Errorf("tie-off events = %v; want the run that finished during the grace period", got)
	}
	rec, _ := record(t, v, "note.md")
	if rec.Hash != state.HashOf([]byte(e.read("note.md"))) {
		t.Error("the finished run was not committed")
	}
}

// TestWatch_StopKillsAgentAfterGraceAndKeepsChangePending: an agent that
// does not finish within the grace period is killed; nothing is appended
// or committed, and the next start processes the change.
func TestWatch_StopKillsAgentAfterGraceAndKeepsChangePending(t *testing.T) {
	e := newEnv(t)
	e.grace = 200 * time.Millisecond
	e.useAgent("", gateBehaviour)
	e.write("note.md", "# Note\n")
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("note.md", "# Note\n\nchanged\n")
	e.waitCalls(1)
	if err := w.stop(); err != nil {
		t.Fatalf("Watch = %v; want nil", err)
	}
	if got := e.events("note.md"); len(got) != 0 {
		t.Fatalf("a killed run appended %v", got)
	}
	e.close(v)

	e.userConfig("") // back to the built-in digest agent
	sum := e.onceFresh()
	if sum.Ran != 1 || sum.Runs[0].Event.String() != "Modified" {
		t.Fatalf("the restart's pass = %+v; want the pending Modified run", sum)
	}
	if got := e.events("note.md"); !slices.Equal(got, []string{"Modified"}) {
		t.Errorf("tie-off events = %v; want [Modified]", got)
	}
}

// TestWatch_NoGoroutineLeak: once its context ends Watch returns, and
// every goroutine it started (watcher, scheduler, runs, timers) is gone.
func TestWatch_NoGoroutineLeak(t *testing.T) {
	e := newEnv(t)
	e.write("a.md", "# A\n")
	base := runtime.NumGoroutine()
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("a.md", "# A\n\nchanged\n")
	e.write("b.md", "# B\n")
	w.settle()
	if n := len(w.runs()); n != 2 {
		t.Errorf("%d runs; want 2", n)
	}
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, waitTimeout, "goroutines back to the baseline", func() bool { return runtime.NumGoroutine() <= base })
}
