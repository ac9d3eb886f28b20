package vault

import (
	"fmt"
	"testing"
)

// burstSize is how many strands change at once in the burst tests, like
// a git pull or a sync of a whole vault.
const burstSize = 1000

func burstPath(i int) string { return fmt.Sprintf("dir%02d/note%04d.md", i%20, i) }

// writeBurst writes every burst strand with content that names round.
func (e *env) writeBurst(round int) {
	e.t.Helper()
	for i := range burstSize {
		e.write(burstPath(i), fmt.Sprintf("# Note %d\n\nround %d\n", i, round))
	}
}

// checkOneSectionEach checks that every burst strand's tie-off holds
// exactly one section, Modified.
func (e *env) checkOneSectionEach() {
	e.t.Helper()
	bad := 0
	for i := range burstSize {
		if evs := e.events(burstPath(i)); len(evs) != 1 || evs[0] != "Modified" {
			if bad++; bad <= 5 {
				e.t.Errorf("%s: tie-off events %v; want [Modified]", burstPath(i), evs)
			}
		}
	}
	if bad > 0 {
		e.t.Errorf("%d of %d strands do not have exactly one new section", bad, burstSize)
	}
}

// TestOnce_BurstOfChanges: 1,000 strands changed at once are 1,000 runs,
// one each, in one --once pass.
func TestOnce_BurstOfChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 runs")
	}
	e := newEnv(t)
	e.writeBurst(0)
	if sum := e.onceFresh(); sum.Adopted != burstSize || sum.Ran != 0 {
		t.Fatalf("first contact: %+v; want %d adopted and no runs", sum.Adopted, burstSize)
	}
	e.writeBurst(1)
	sum := e.onceFresh()
	if sum.Ran != burstSize || sum.OK != burstSize || len(sum.Runs) != burstSize {
		t.Errorf("pass: %d runs (%d ok); want %d", sum.Ran, sum.OK, burstSize)
	}
	e.checkOneSectionEach()
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("the next pass ran %d more times", sum.Ran)
	}
}

// TestWatch_BurstOfChanges: the same burst in watch mode (more paths
// than the watcher keeps apart collapse into a full rescan, which is
// reconciled like any other hint).
func TestWatch_BurstOfChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 runs")
	}
	e := newEnv(t)
	e.writeBurst(0)
	v := e.open()
	w := e.watch(v, WatchOptions{})
	w.settle()
	if n := len(w.runs()); n != 0 {
		t.Fatalf("adoption ran %d times", n)
	}
	e.writeBurst(1)
	w.settle()
	if n := len(w.runs()); n != burstSize {
		t.Errorf("%d runs; want %d", n, burstSize)
	}
	e.checkOneSectionEach()
}
