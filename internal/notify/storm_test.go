package notify

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// recorder is a sink that keeps what it was sent, and when.
type recorder struct {
	mu   sync.Mutex
	evs  []Event
	when []time.Time
}

func (r *recorder) Name() string { return "recorder" }

func (r *recorder) Send(_ context.Context, e Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, e)
	r.when = append(r.when, time.Now())
	return nil
}

func (r *recorder) got() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs...)
}

// TestNotifier_StormCoalesced: 200 failures at once (a broken agent
// meeting a folder of notes) make PerMinute notifications, then one that
// counts the rest when the minute is over, and nothing more; a minute
// later the next event goes out at once. In fake time: the minute holds
// exactly.
func TestNotifier_StormCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		var log logBuf
		n := New(Options{Vault: "/v", Sinks: []Sink{rec}, PerMinute: 3, Queue: 16, Log: log.logger()})
		start := time.Now()
		// Queued before Run starts: the queue holds 16, the rest are
		// counted at once, and said.
		for i := range 200 {
			n.Notify(Failed("/v", fmt.Sprintf("n%d.md", i), fmt.Sprintf("run-%d", i), "agent missing", start))
		}
		require.Equal(t, 1, strings.Count(log.String(), "too many notifications at once"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- n.Run(ctx) }()
		synctest.Wait()
		got := rec.got()
		require.Len(t, got, 3)
		for _, e := range got {
			require.Equal(t, KindFailed, e.Kind)
		}

		time.Sleep(time.Minute - time.Millisecond)
		synctest.Wait()
		require.Len(t, rec.got(), 3, "nothing more within the minute")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		got = rec.got()
		require.Len(t, got, 4)
		c := got[3]
		require.Equal(t, KindCoalesced, c.Kind)
		require.Equal(t, map[Kind]int{KindFailed: 197}, c.Counts)
		require.Equal(t, "knotd: 197 more", c.Title)
		require.Contains(t, c.Message, "197 runs failed")

		time.Sleep(time.Hour)
		synctest.Wait()
		require.Len(t, rec.got(), 4, "an hour later, nothing more")
		n.Notify(events(time.Now())[0])
		synctest.Wait()
		got = rec.got()
		require.Len(t, got, 5)
		require.Equal(t, KindQuestion, got[4].Kind)

		// Never more than PerMinute in any minute.
		rec.mu.Lock()
		for i := range rec.when {
			if j := i + 3; j < len(rec.when) {
				require.GreaterOrEqual(t, rec.when[j].Sub(rec.when[i]), time.Minute, "sends %d and %d", i, j)
			}
		}
		rec.mu.Unlock()
		cancel()
		require.NoError(t, <-done)
	})
}

// TestNotifier_FlushSendsHeldAtOnce: --once flushes before it exits: what
// the limit holds back goes out at once, counted in one event.
func TestNotifier_FlushSendsHeldAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		n := New(Options{Sinks: []Sink{rec}, PerMinute: 2})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- n.Run(ctx) }()
		at := time.Now()
		for _, e := range events(at) {
			n.Notify(e)
		}
		n.Notify(Paused("/v", "b.md", "budget/x", "the budget is spent", "tomorrow", at))
		require.NoError(t, n.Flush(ctx))
		got := rec.got()
		require.Len(t, got, 3)
		require.Equal(t, map[Kind]int{KindPaused: 2}, got[2].Counts)
		require.Equal(t, at, time.Now(), "no wait")
		cancel()
		require.NoError(t, <-done)
	})
}
