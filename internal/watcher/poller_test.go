package watcher

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestPoller_RescansEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &Poller{Interval: 30 * time.Second}
		ctx, cancel := context.WithCancel(t.Context())
		out := make(chan Hint)
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- p.Run(ctx, out) }()
		var at []time.Duration
		for range 3 {
			h := <-out
			if !h.Full() {
				t.Fatalf("Poller sent %v; want a full rescan", h)
			}
			at = append(at, time.Since(start))
		}
		want := []time.Duration{0, 30 * time.Second, 60 * time.Second}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("rescans at %v; want %v", at, want)
			}
		}
		// A slow consumer gets one rescan, not a backlog.
		time.Sleep(5 * time.Minute)
		if h := <-out; !h.Full() {
			t.Fatalf("Poller sent %v; want a full rescan", h)
		}
		synctest.Wait()
		select {
		case h := <-out:
			t.Fatalf("second rescan %v right after a busy spell; want one", h)
		default:
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v; want nil", err)
		}
		if _, ok := <-out; ok {
			t.Fatalf("out not closed")
		}
	})
}

func TestPoller_BadInterval(t *testing.T) {
	out := make(chan Hint)
	if err := (&Poller{}).Run(t.Context(), out); err == nil {
		t.Errorf("Run with zero Interval = nil; want an error")
	}
	if _, ok := <-out; ok {
		t.Errorf("out not closed")
	}
}
