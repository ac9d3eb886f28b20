package vault

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
)

// slowAgent answers after d (of the bubble's fake time).
type slowAgent struct{ d time.Duration }

func (a slowAgent) Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error) {
	select {
	case <-time.After(a.d):
	case <-ctx.Done():
		return agentrun.Result{}, ctx.Err()
	}
	return agentrun.Result{Outcome: agentrun.OutcomeOK, Reply: "answered " + req.Event.Strand.Path}, nil
}

// TestWatch_ContinuousWritesRunOncePerMaxWait: a note written without a
// pause runs about once per max_wait, not twice. Each run sees the note
// move on while it runs, so it leaves a follow-up; the watcher (here a
// poller whose passes come as the watcher's max_wait hints do, just after
// the follow-up's old deadline) finds the same writes. The follow-up used
// to fire max_wait after the run, and the hint's run a few milliseconds
// later (or the follow-up of a run before the hint's, after it): 21 and 19
// runs in a minute where 12 are due.
func TestWatch_ContinuousWritesRunOncePerMaxWait(t *testing.T) {
	// A 50 ms run always sees a write; a 5 ms run only now and then, and
	// one that does not leaves the follow-up of the run before it waiting.
	for _, agent := range []time.Duration{50 * time.Millisecond, 5 * time.Millisecond} {
		t.Run(agent.String(), func(t *testing.T) { continuousWrites(t, agent) })
	}
}

func continuousWrites(t *testing.T, agent time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		maxWait, debounce := 5*time.Second, time.Second
		poll := maxWait + 100*time.Millisecond
		e.flags.Poll, e.flags.Debounce, e.flags.MaxWait = &poll, &debounce, &maxWait
		e.write("n.md", "# N\n")
		e.onceFresh()
		o := e.options()
		o.Agent = slowAgent{d: agent}
		v, err := Open(e.root, o)
		mustDo(t, err)
		t.Cleanup(func() { mustDo(t, v.Close()) })
		var mu sync.Mutex
		var runs []time.Duration
		start := time.Now()
		probeOf(v).workedFn = func(rel string, rep RunReport) {
			if rep.Ran {
				mu.Lock()
				runs = append(runs, time.Since(start))
				mu.Unlock()
			}
		}
		watchInBubble(t, v)
		// Write for a minute, every 13 ms, a byte more each time (so that
		// each write changes the note's size, whatever the file system's
		// clock does). Each write waits until every goroutine of the
		// daemon waits (on a timer, the agent's included): the file system
		// is real, only time is fake, and a read must not meet the note
		// half-written.
		for i := 0; time.Since(start) < time.Minute; i++ {
			synctest.Wait()
			e.write("n.md", "# N\n\n"+strings.Repeat("x", i)+"\n")
			time.Sleep(13 * time.Millisecond)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		t.Logf("%d runs in a minute of writes, at %v", len(runs), runs)
		// A pass every 5.1 s finds the note changed: 11 or 12 in a
		// minute, and no other run.
		if len(runs) > 12 {
			t.Errorf("%d runs in a minute of continuous writes with max_wait %v; want at most 12", len(runs), maxWait)
		}
		for i := 1; i < len(runs); i++ {
			if gap := runs[i] - runs[i-1]; gap < maxWait {
				t.Errorf("runs %d and %d are %v apart; want max_wait (%v) at least", i, i+1, gap, maxWait)
			}
		}
	})
}
