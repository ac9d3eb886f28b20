package vault

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/testutil"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// firedBy returns the Fired-By line of each recorded prompt, by strand.
func (e *env) firedBy() map[string][]string {
	e.t.Helper()
	out := map[string][]string{}
	for _, c := range e.calls() {
		strand := c.Env["KNOT_STRAND"]
		for _, line := range strings.Split(c.Stdin, "\n") {
			if f, ok := strings.CutPrefix(line, "Fired-By: "); ok {
				out[strand] = append(out[strand], f)
				break
			}
		}
	}
	return out
}

// TestWatch_CatchesUpOnChangesWhileStopped: what changed while knotd was
// not running is processed when it starts again, once, as catch-up.
func TestWatch_CatchesUpOnChangesWhileStopped(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.write("edit.md", "# Edit\n")
	e.write("gone.md", "# Gone\n")
	e.write("same.md", "# Same\n")
	v := e.open()
	w := e.watch(v, WatchOptions{})
	w.settle()
	mustDo(t, w.stop())
	e.close(v)

	e.write("edit.md", "# Edit\n\nwhile stopped\n")
	e.remove("gone.md")
	e.write("new.md", "# New\n")

	v = e.open()
	w = e.watch(v, WatchOptions{})
	w.settle()
	want := map[string][]string{"edit.md": {"catch-up"}, "gone.md": {"catch-up"}, "new.md": {"catch-up"}}
	if got := e.firedBy(); !mapsEqual(got, want) {
		t.Errorf("runs by strand = %v; want %v", got, want)
	}
	if got := len(w.runs()); got != 3 {
		t.Errorf("%d runs; want 3", got)
	}
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestWatch_FirstContactAdoptsWithoutRunning: the first watch of a vault
// adopts its strands; the watcher's startup rescan right after finds
// nothing to run.
func TestWatch_FirstContactAdoptsWithoutRunning(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	for _, rel := range []string{"a.md", "b/c.md", "b/d/e.md"} {
		e.write(rel, "# "+rel+"\n")
	}
	v := e.open()
	w := e.watch(v, WatchOptions{})
	w.settle()
	if n := len(e.calls()); n != 0 || len(w.runs()) != 0 {
		t.Errorf("first contact ran %d agents (%d runs); want none", n, len(w.runs()))
	}
	for _, rel := range []string{"a.md", "b/c.md", "b/d/e.md"} {
		if rec, ok := record(t, v, rel); !ok || rec.LastOutcome != state.OutcomeAdopted {
			t.Errorf("%s: record %+v, %v; want adopted", rel, rec, ok)
		}
	}
}

// TestWatch_AllRunsEachStrandOnce: --all on a vault knotd has never seen
// runs every strand once, though the startup rescan finds them all new
// too.
func TestWatch_AllRunsEachStrandOnce(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	for _, rel := range []string{"a.md", "b/c.md", "b/d/e.md"} {
		e.write(rel, "# "+rel+"\n")
	}
	v := e.open()
	w := e.watch(v, WatchOptions{All: true})
	w.settle()
	want := map[string][]string{"a.md": {"catch-up"}, "b/c.md": {"catch-up"}, "b/d/e.md": {"catch-up"}}
	if got := e.firedBy(); !mapsEqual(got, want) {
		t.Errorf("runs by strand = %v; want %v", got, want)
	}
}

// TestOnce_All: --once --all runs every strand, changed or not, and the
// strands that are gone.
func TestOnce_All(t *testing.T) {
	e := newEnv(t)
	e.write("a.md", "# A\n")
	e.write("b.md", "# B\n")
	e.onceFresh()
	e.remove("b.md")
	v := e.open()
	sum := e.once(v, true)
	var got []string
	for _, r := range sum.Runs {
		got = append(got, r.Event.String()+" "+r.Strand)
	}
	if want := []string{"Modified a.md", "Deleted b.md"}; !slices.Equal(got, want) {
		t.Errorf("runs = %v; want %v", got, want)
	}
}

// TestWatch_Poll: with poll set, changes are found by reconciling on an
// interval instead of by file system events.
func TestWatch_Poll(t *testing.T) {
	e := newEnv(t)
	poll := 100 * time.Millisecond
	e.flags.Poll = &poll
	e.write("a.md", "# A\n")
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("a.md", "# A\n\npolled\n")
	e.write("b.md", "# B\n")
	w.settle()
	if got := e.events("a.md"); !slices.Equal(got, []string{"Modified"}) {
		t.Errorf("a.md: %v", got)
	}
	if got := e.events("b.md"); !slices.Equal(got, []string{"Created"}) {
		t.Errorf("b.md: %v", got)
	}
	if got := len(w.runs()); got != 2 {
		t.Errorf("%d runs; want 2", got)
	}
}

// TestWatch_PollReleasesMemoryOncePerCheck: a pass over the whole vault
// gives memory back (a forced garbage collection) at most once per check
// interval, however often --poll makes passes: ten a second here, with
// checks an hour apart, a single release.
func TestWatch_PollReleasesMemoryOncePerCheck(t *testing.T) {
	e := newEnv(t)
	poll := 100 * time.Millisecond
	e.flags.Poll = &poll
	e.write("a.md", "# A\n")
	v := e.open()
	v.checkEvery = time.Hour
	var releases atomic.Int64
	probeOf(v).releasedFn = func() { releases.Add(1) }
	w := e.watch(v, WatchOptions{})
	testutil.WaitFor(t, waitTimeout, "ten polled passes", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.batches) >= 10
	})
	mustDo(t, w.stop())
	if n := releases.Load(); n != 1 {
		t.Errorf("%d releases after ten passes within one check interval; want 1", n)
	}
}
