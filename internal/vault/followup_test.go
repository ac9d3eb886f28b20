package vault

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/testutil"

	"github.com/knotd/knotd/internal/watcher"
)

// waitCalls waits until the fake agents were called n times.
func (e *env) waitCalls(n int) {
	e.t.Helper()
	testutil.WaitFor(e.t, waitTimeout, fmt.Sprintf("%d agent calls", n), func() bool { return len(e.calls()) >= n })
}

// waitHint waits until a batch reconciled after the from-th contains a
// hint for rel (or a full rescan), and returns the number of batches.
func (w *watching) waitHint(from int, rel string) int {
	w.e.t.Helper()
	n := 0
	testutil.WaitFor(w.e.t, waitTimeout, "a hint for "+rel, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		n = len(w.batches)
		for _, b := range w.batches[from:] {
			if slices.ContainsFunc(b, func(h watcher.Hint) bool { return h.Full() || h.Path == rel }) {
				return true
			}
		}
		return false
	})
	return n
}

func (w *watching) batchCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.batches)
}

// TestWatch_EditsDuringRunGiveOneFollowUp: while the agent runs, the user
// saves three times; each save is seen and reconciled. When the run ends
// there is exactly one follow-up run, on the newest content.
func TestWatch_EditsDuringRunGiveOneFollowUp(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", gateBehaviour)
	e.write("note.md", "# Note\n")
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("note.md", "# Note\n\nedit 0\n")
	e.waitCalls(1) // the run holds at the gate

	for i := 1; i <= 3; i++ {
		from := w.batchCount()
		e.write("note.md", strings.Replace(e.read("note.md"), fmt.Sprintf("edit %d", i-1), fmt.Sprintf("edit %d", i), 1))
		w.waitHint(from, "note.md")
	}
	e.release(1)
	e.waitCalls(2)
	e.release(2)
	w.settle()

	calls := e.calls()
	if len(calls) != 2 {
		t.Fatalf("%d agent calls; want 2 (the run and one follow-up)", len(calls))
	}
	if !strings.Contains(calls[0].Stdin, "edit 0") || strings.Contains(calls[0].Stdin, "edit 3") {
		t.Errorf("the first run saw the wrong content:\n%s", calls[0].Stdin)
	}
	if !strings.Contains(calls[1].Stdin, "edit 3") || !strings.Contains(calls[1].Stdin, "Event: Modified") {
		t.Errorf("the follow-up did not see the newest content:\n%s", calls[1].Stdin)
	}
	if got, want := e.events("note.md"), []string{"Modified", "Modified"}; !slices.Equal(got, want) {
		t.Errorf("tie-off events = %v; want %v", got, want)
	}
	rec, _ := record(t, v, "note.md")
	if rec.Hash != state.HashOf([]byte(e.read("note.md"))) || rec.Turns != 2 {
		t.Errorf("record = %+v; want the newest content processed after 2 turns", rec)
	}
}

// TestOnce_EditDuringRunGivesOneFollowUp: --once has no watcher; the
// processor's re-check after the run finds the edit and the pass runs the
// strand again before it ends.
func TestOnce_EditDuringRunGivesOneFollowUp(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", gateBehaviour)
	e.write("note.md", "# Note\n")
	e.onceFresh() // adopt
	e.write("note.md", "# Note\n\nfirst\n")
	v := e.open()
	done := make(chan Summary, 1)
	go func() {
		sum, err := v.Once(context.Background(), OnceOptions{})
		if err != nil {
			t.Errorf("Once: %v", err)
		}
		done <- sum
	}()
	e.waitCalls(1)
	e.write("note.md", e.read("note.md")+"second\n")
	e.write("note.md", e.read("note.md")+"third\n")
	e.release(1)
	e.waitCalls(2)
	e.release(2)
	sum := <-done
	if sum.Ran != 2 || sum.OK != 2 {
		t.Errorf("summary = %+v; want 2 ok runs", sum)
	}
	calls := e.calls()
	if len(calls) != 2 || !strings.Contains(calls[1].Stdin, "third") {
		t.Errorf("calls = %d, the follow-up's prompt:\n%s", len(calls), calls[len(calls)-1].Stdin)
	}
	if sum := e.once(v, false); sum.Ran != 0 {
		t.Errorf("the next pass ran again: %+v", sum.Runs)
	}
}
