package vault

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
)

// TestWatch_InFakeTime runs a whole polling Watch in a synctest bubble.
// Every time-dependent path of the daemon (the poller's passes, the
// quiet period a gone strand waits, the heartbeat, the check of the vault
// directory, retries) reads one clock, v.now (time.Now by default), and
// waits on the time package's timers, both of which the bubble fakes: so
// the periods hold exactly, and an hour of watching passes at once. Only
// the file system's own clock (mtimes) stays real.
func TestWatch_InFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, v := pollingVault(t)
		watchInBubble(t, v)
		// at waits until d after start, then until every goroutine of
		// the daemon waits, and returns n.md's tie-off's events.
		start := time.Now()
		at := func(d time.Duration) []string {
			time.Sleep(time.Until(start.Add(d)))
			synctest.Wait()
			return e.events("n.md")
		}
		at(time.Second) // the catch-up pass is over

		tests := []struct {
			at     time.Duration
			change func()
			want   []string
		}{
			// A pass every 10 s: a change is answered at the first pass
			// after it, and not a moment before.
			{at: 12 * time.Second, change: func() { e.write("n.md", "# One\n") }},
			{at: 19 * time.Second, want: nil},
			{at: 21 * time.Second, want: []string{"Created"}},
			{at: 22 * time.Second, change: func() { e.write("n.md", "# One\n\nTwo\n") }},
			{at: 29 * time.Second, want: []string{"Created"}},
			{at: 31 * time.Second, want: []string{"Created", "Modified"}},
			// A strand found gone waits one quiet period (30 s) before
			// its deletion runs: it may have moved.
			{at: 32 * time.Second, change: func() { e.remove("n.md") }},
			{at: 69 * time.Second, want: []string{"Created", "Modified"}},
			{at: 71 * time.Second, want: []string{"Created", "Modified", "Deleted"}},
			// An hour of watching later: nothing more (no run of its
			// own writes, no retry of anything).
			{at: time.Hour, want: []string{"Created", "Modified", "Deleted"}},
		}
		for _, tt := range tests {
			got := at(tt.at)
			if tt.change != nil {
				tt.change()
				continue
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("n.md's tie-off at %v = %v; want %v", tt.at, got, tt.want)
			}
		}
	})
}

// TestWatch_JournaledRetriesBackOff: a reply that cannot be committed (a
// disk that stays full) is tried again with pauses that double up to
// maxRetryPause, not at every check: over an hour, a few dozen tries,
// not hundreds. Once the disk has room, it is finished within one
// longest pause, and the agent ran once.
func TestWatch_JournaledRetriesBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, v := pollingVault(t)
		var mu sync.Mutex
		full, tries := true, 0
		probeOf(v).completingFn = func(string) error {
			mu.Lock()
			defer mu.Unlock()
			tries++
			if full {
				return fmt.Errorf("commit: %w", syscall.ENOSPC)
			}
			return nil
		}
		watchInBubble(t, v)
		e.write("n.md", "# One\n")
		time.Sleep(time.Hour)
		synctest.Wait()
		mu.Lock()
		n := tries
		full = false
		mu.Unlock()
		t.Logf("%d tries to commit in an hour of a full disk", n)
		// Every check (10 s) would be 360 tries; the pauses of the
		// journal's retries and of the strand's failures, doubling to 5
		// minutes, leave about 30.
		if n < 5 || n > 60 {
			t.Errorf("%d tries to commit in an hour of a full disk; want a backed-off few (5 to 60)", n)
		}
		time.Sleep(maxRetryPause + 2*v.checkEvery)
		synctest.Wait()
		ps, err := v.store.Pendings()
		mustDo(t, err)
		if len(ps) != 0 {
			t.Fatalf("%d runs still journaled %v after the disk had room again", len(ps), maxRetryPause+2*v.checkEvery)
		}
		if evs := e.events("n.md"); !slices.Equal(evs, []string{"Created"}) {
			t.Errorf("n.md's tie-off = %v; want one Created", evs)
		}
	})
}

// pollingVault returns an adopted vault that polls every 10 s, with a
// quiet period of 30 s.
func pollingVault(t *testing.T) (*env, *Vault) {
	e := newEnv(t)
	poll, debounce, maxWait := 10*time.Second, 30*time.Second, time.Minute
	e.flags.Poll, e.flags.Debounce, e.flags.MaxWait = &poll, &debounce, &maxWait
	e.onceFresh() // adopted: what follows is watched
	return e, e.open()
}

// watchInBubble runs v.Watch until the test ends, in the test's synctest
// bubble.
func watchInBubble(t *testing.T, v *Vault) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Watch(ctx, WatchOptions{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
}

// pricedAgent answers at once, reporting a cost, as Claude Code does.
type pricedAgent struct{ cost float64 }

func (a pricedAgent) Run(_ context.Context, req agentrun.Request) (agentrun.Result, error) {
	return agentrun.Result{Outcome: agentrun.OutcomeOK, Reply: "answered " + req.Event.Strand.Path,
		Usage: &agentrun.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: a.cost}}, nil
}

// TestWatch_BudgetDefersAndResumesTheNextDay: a burst of changes reaches
// the day's budget midway: the changes over it wait, unrecorded and said
// once, and run the next day (UTC), in fake time; each note is answered
// once, none lost.
func TestWatch_BudgetDefersAndResumesTheNextDay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		// Passes and checks every 10 minutes: a day of them in fake time
		// stays quick.
		poll, debounce, maxWait, one := 10*time.Minute, 30*time.Second, time.Minute, 1
		e.flags.Poll, e.flags.Debounce, e.flags.MaxWait, e.flags.Concurrency = &poll, &debounce, &maxWait, &one
		e.userConfig("budget: {day_usd: 1}\n")
		e.onceFresh()
		o, log := e.logged()
		o.Agent = pricedAgent{cost: 0.4}
		v, err := Open(e.root, o)
		mustDo(t, err)
		t.Cleanup(func() { mustDo(t, v.Close()) })
		v.checkEvery = 10 * time.Minute
		watchInBubble(t, v)

		notes := []string{"a.md", "b.md", "c.md", "d.md", "e.md"}
		for _, n := range notes {
			e.write(n, "# "+n+"\n")
		}
		answered := func() (n int) {
			for _, note := range notes {
				n += len(e.sections(note))
			}
			return n
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := answered(); n != 3 {
			t.Fatalf("%d notes answered within the day's budget ($1, $0.40 a run); want 3", n)
		}
		st, err := v.Control().Status(context.Background())
		mustDo(t, err)
		if len(st.Deferred) != 2 || !strings.Contains(st.Deferred[0].Why, "budget of $1.00 a day is spent") {
			t.Fatalf("status says %+v waits for the budget; want 2 notes", st.Deferred)
		}
		if n := strings.Count(log.String(), "a change waits for the budget"); n != 1 {
			t.Errorf("said %d times that changes wait for the budget; want once:\n%s", n, log.String())
		}

		next := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		time.Sleep(time.Until(next) + 30*time.Minute)
		synctest.Wait()
		for _, n := range notes {
			if evs := e.events(n); !slices.Equal(evs, []string{"Created"}) {
				t.Errorf("%s's tie-off the next day = %v; want one Created\n%s", n, evs, log.String())
			}
		}
	})
}

// gatedAgent answers a run once the test sends on gate.
type gatedAgent struct{ gate chan struct{} }

func (a gatedAgent) Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error) {
	select {
	case <-a.gate:
	case <-ctx.Done():
		return agentrun.Result{Outcome: agentrun.OutcomeFailed, Reason: "canceled"}, ctx.Err()
	}
	return agentrun.Result{Outcome: agentrun.OutcomeOK, Reply: "answered " + req.Event.Strand.Path}, nil
}

// TestWatch_BudgetCountsRunsInFlight: with budget day_runs: 3 and two
// runs at once, five changed notes make exactly three runs: the runs in
// flight count against the cap. The two left wait for the budget, listed
// with the time they started waiting; one run by hand leaves the list at
// once, and the other's reason gives the day's count as it is now.
func TestWatch_BudgetCountsRunsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		poll, debounce, maxWait, two := 10*time.Minute, 30*time.Second, time.Minute, 2
		e.flags.Poll, e.flags.Debounce, e.flags.MaxWait, e.flags.Concurrency = &poll, &debounce, &maxWait, &two
		e.userConfig("budget: {day_runs: 3}\n")
		e.onceFresh()
		o, log := e.logged()
		agent := gatedAgent{gate: make(chan struct{})}
		o.Agent = agent
		v, err := Open(e.root, o)
		mustDo(t, err)
		t.Cleanup(func() { mustDo(t, v.Close()) })
		v.checkEvery = 10 * time.Minute
		watchInBubble(t, v)

		notes := []string{"a.md", "b.md", "c.md", "d.md", "e.md"}
		for _, n := range notes {
			e.write(n, "# "+n+"\n")
		}
		// Let the runs go one at a time, as long as one takes it.
		release := func() (n int) {
			for {
				select {
				case agent.gate <- struct{}{}:
					n++
					synctest.Wait()
				case <-time.After(time.Hour):
					return n
				}
			}
		}
		released := release()
		answered := func() (ns []string) {
			for _, note := range notes {
				if len(e.sections(note)) > 0 {
					ns = append(ns, note)
				}
			}
			return ns
		}
		if got := answered(); len(got) != 3 || released != 3 {
			t.Fatalf("%d runs (%v answered) within day_runs: 3, two at a time; want 3\n%s", released, got, log.String())
		}
		st, err := v.Control().Status(context.Background())
		mustDo(t, err)
		if len(st.Deferred) != 2 {
			t.Fatalf("status lists %+v waiting for the budget; want 2 notes", st.Deferred)
		}
		for _, d := range st.Deferred {
			if d.Since.IsZero() || d.Since.After(time.Now()) {
				t.Errorf("%s waits for the budget since %v; want when it started waiting", d.Note, d.Since)
			}
			if !strings.Contains(d.Why, "budget of 3 runs a day is spent (3 today") {
				t.Errorf("%s waits because %q; want the day's 3 runs", d.Note, d.Why)
			}
		}

		// One of them run by hand: it leaves the list at once, and the
		// other's reason counts it.
		byHand, other := st.Deferred[0].Note, st.Deferred[1].Note
		res, err := v.Control().Run(context.Background(), []string{byHand})
		mustDo(t, err)
		if len(res.Done) != 1 {
			t.Fatalf("knotd run %s: %+v", byHand, res)
		}
		synctest.Wait()
		if n := release(); n != 1 {
			t.Fatalf("%d runs after knotd run %s; want 1", n, byHand)
		}
		st, err = v.Control().Status(context.Background())
		mustDo(t, err)
		if len(st.Deferred) != 1 || st.Deferred[0].Note != other {
			t.Fatalf("after %s ran by hand, status lists %+v waiting for the budget; want only %s", byHand, st.Deferred, other)
		}
		if !strings.Contains(st.Deferred[0].Why, "(4 today") {
			t.Errorf("%s waits because %q; want the day's count now, 4", other, st.Deferred[0].Why)
		}
	})
}
