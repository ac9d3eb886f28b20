package notify

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/testutil"
)

// logBuf is a log a test reads while the notifier writes it.
type logBuf struct{ testutil.Buffer }

func (l *logBuf) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// start starts a Notifier's Run, stopped (and waited for) when the test
// ends.
func start(t *testing.T, o Options) *Notifier {
	t.Helper()
	n := New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	return n
}

// flush flushes n, failing the test if it takes over a minute.
func flush(t *testing.T, n *Notifier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// events are three events of a vault, of each kind.
func events(at time.Time) []Event {
	return []Event{
		Question("/home/ada/notes", "ideas/plan.md", "3f9a2c1b", "edit ideas/plan.md", false, at),
		Failed("/home/ada/notes", "ideas/plan.md", "01936f4e-1a2b-7c3d-8e4f-a1b2c3d4e5f6", "claude exited with status 1: rate limited", at),
		Paused("/home/ada/notes", "log.md", "breaker/log.md/1", "its last 5 runs failed", "knotd resume log.md resumes it", at),
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
