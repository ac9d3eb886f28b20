package watcher

import (
	"context"
	"fmt"
	"time"
)

// Poller replaces the Watcher where kernel notifications do not work
// (network file systems, FUSE mounts): it asks for a full rescan at a
// fixed interval. It has the Watcher's Run contract, so the consumer
// treats both alike.
type Poller struct {
	// Interval is the time between full rescans; it must be positive.
	Interval time.Duration
}

// Run sends a full rescan (Hint{Dir: true}) at once and then Interval
// after the consumer took the previous one, until ctx ends, and closes out
// when it returns. A slow consumer gets no backlog. It returns nil when ctx ends, or an error for a bad Interval.
func (p *Poller) Run(ctx context.Context, out chan<- Hint) error {
	defer close(out)
	if p.Interval <= 0 {
		return fmt.Errorf("watcher: poll interval %v is not positive", p.Interval)
	}
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case out <- fullRescan:
			t.Reset(p.Interval) // the next one Interval after this was taken, not a backlog
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
