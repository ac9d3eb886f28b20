package vault

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/testutil"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// TestWatch_ReleasesStateAfterFullPass: the startup catch-up reads every
// record; an idle daemon must not keep those pages of the state file
// resident afterwards.
func TestWatch_ReleasesStateAfterFullPass(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	const n = 3000
	for i := range n {
		e.write(fmt.Sprintf("d%02d/n%04d.md", i%30, i), fmt.Sprintf("# note %d\n", i))
	}
	e.onceFresh() // adopts them: n records

	v := e.open()
	path := e.statePath()
	if err := v.store.ForEach(func(state.Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	read := testutil.MustMappedRSS(t, path)
	if read < 256 {
		t.Fatalf("reading %d records left %d KiB of the state file resident; want the pages they fill (256 KiB or more)", n, read)
	}
	e.watch(v, WatchOptions{}) // returns after the startup catch-up was reconciled
	// A journal check may map a page or two meanwhile; the records'
	// pages must be gone.
	if kb := testutil.MustMappedRSS(t, path); kb >= read/4 {
		t.Errorf("after the startup catch-up %d KiB of the state file are resident (%d KiB after reading the records); want them released", kb, read)
	}
}

// TestWatch_ReleasesStateAfterRuns: once runs are over, the pages of the
// state file they mapped are given back at the next check.
func TestWatch_ReleasesStateAfterRuns(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	const n = 10
	body := strings.Repeat("a line of the note\n", 100)
	for i := range n {
		e.write(fmt.Sprintf("d%d/n%03d.md", i%10, i), fmt.Sprintf("# note %d\n%s", i, body))
	}
	e.onceFresh()
	v := e.open()
	v.checkEvery = 20 * time.Millisecond
	path := e.statePath()
	// What is resident right after each release, measured in the loop
	// before anything else can map a page again (a journal check does).
	//
	// The hook runs in Watch's goroutine, where t.Fatal (or t.Skip) must
	// not be called: it only keeps the first error, which stops the
	// waits below, and the test's goroutine fails with it.
	var mu sync.Mutex
	var after []int
	var rssErr error
	probeOf(v).releasedFn = func() {
		kb, err := testutil.MappedRSS(path)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			rssErr = cmp.Or(rssErr, err)
			return
		}
		after = append(after, kb)
	}
	failed := func() error {
		mu.Lock()
		defer mu.Unlock()
		return rssErr
	}
	w := e.watch(v, WatchOptions{})
	mu.Lock()
	from := len(after) // the start-up catch-up's release came before
	mu.Unlock()
	for i := range n {
		rel := fmt.Sprintf("d%d/n%03d.md", i%10, i)
		e.write(rel, e.read(rel)+"edited\n")
	}
	testutil.WaitFor(t, waitTimeout, "every edited note to run", func() bool { return len(w.runs()) >= n || failed() != nil })
	testutil.CheckSmaps(t, failed())
	// A release while a run is under way may find its pages mapped again
	// at once; the one after the last work leaves nothing resident.
	testutil.WaitFor(t, waitTimeout, "a release after the runs that leaves nothing of the state file resident", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(after[from:], 0) || rssErr != nil
	})
	testutil.CheckSmaps(t, failed())
}

// TestWatchLoop_ReleaseAfterWork: memory is given back when work was done
// since the last time, and only then.
func TestWatchLoop_ReleaseAfterWork(t *testing.T) {
	e := newEnv(t)
	body := strings.Repeat("a line of the note\n", 100)
	for i := range 500 {
		e.write(fmt.Sprintf("d%d/n%03d.md", i%10, i), fmt.Sprintf("# note %d\n%s", i, body))
	}
	e.onceFresh()
	v := e.open()
	path := e.statePath()
	readAll := func() {
		t.Helper()
		mustDo(t, v.store.ForEach(func(r state.Record) error {
			_, _, err := v.store.Content(r.Path)
			return err
		}))
		if kb := testutil.MustMappedRSS(t, path); kb == 0 {
			t.Fatal("reading every record and its content left nothing of the state file resident")
		}
	}
	var processed atomic.Int64
	l := newLoop(v, &scheduler.Scheduler[Job]{}, 0, nil, &processed)
	steps := []struct {
		name     string
		work     int64
		released bool
	}{
		{"no work yet", 0, false},
		{"work", 3, true},
		{"no work since", 0, false},
		{"more work", 1, true},
	}
	for _, st := range steps {
		readAll()
		processed.Add(st.work)
		l.Check() // nothing journaled, nothing deferred: it releases, or not
		if got := testutil.MustMappedRSS(t, path) == 0; got != st.released {
			t.Errorf("%s: released = %v; want %v", st.name, got, st.released)
		}
	}
}
