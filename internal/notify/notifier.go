package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Sink is where a notification goes: the desktop, a command, a URL.
type Sink interface {
	// Name names the sink in the log ("desktop", "command", "url").
	Name() string
	// Send delivers e, giving up when ctx ends.
	Send(ctx context.Context, e Event) error
}

// Defaults of Options.
const (
	// DefaultPerMinute is how many notifications go out in a minute at
	// most; the rest are coalesced into one.
	DefaultPerMinute = 5
	// DefaultQueue is how many events wait to be sent at most; more are
	// coalesced.
	DefaultQueue = 64
	// DefaultTimeout bounds one send to one sink.
	DefaultTimeout = 10 * time.Second
	// rememberIDs is how many sent IDs a Notifier remembers to send each
	// once (the oldest is forgotten first).
	rememberIDs = 4096
	// window is the span PerMinute counts in.
	window = time.Minute
)

// Options configure a Notifier.
type Options struct {
	// Vault is the vault's root, named in coalesced events.
	Vault string
	// Sinks receive every event, in order; none makes the Notifier
	// discard events.
	Sinks []Sink
	// Log receives what fails (nil discards it).
	Log *slog.Logger
	// PerMinute, Queue and Timeout: 0 means the default.
	PerMinute int
	Queue     int
	Timeout   time.Duration
}

// Notifier sends events to its sinks, each event once, from the one
// goroutine of Run. Notify never blocks. It is safe for concurrent use.
type Notifier struct {
	o Options

	mu      sync.Mutex
	seen    map[string]bool // IDs notified (queued or held)
	order   []string        // seen's IDs, oldest first
	queue   []Event         // waiting to be sent
	held    map[Kind]int    // held back by the storm limit or a full queue
	full    bool            // the queue was full (said once until it drains)
	flushes []chan struct{} // Flush callers waiting for the queue to drain
	wake    chan struct{}   // Run's signal: something to do
}

// New returns a Notifier; start its Run.
func New(o Options) *Notifier {
	if o.PerMinute <= 0 {
		o.PerMinute = DefaultPerMinute
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Notifier{o: o, seen: map[string]bool{}, held: map[Kind]int{}, wake: make(chan struct{}, 1)}
}

// Notify queues e for the sinks, unless an event with its ID was notified
// already. It never blocks: when the queue is full, e is counted in the
// next coalesced event instead. A Notifier without sinks does nothing.
func (n *Notifier) Notify(e Event) {
	if n == nil || len(n.o.Sinks) == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen[e.ID] {
		return
	}
	n.seen[e.ID] = true
	n.order = append(n.order, e.ID)
	if len(n.order) > rememberIDs {
		delete(n.seen, n.order[0])
		n.order = n.order[1:]
	}
	if len(n.queue) >= n.o.Queue {
		if !n.full {
			n.full = true
			n.o.Log.Warn("too many notifications at once: the rest are counted in one", "queue", n.o.Queue)
		}
		n.held[e.Kind]++
	} else {
		n.queue = append(n.queue, e)
	}
	n.signal()
}

// signal wakes Run; n.mu is held.
func (n *Notifier) signal() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Flush waits until what was notified before it is sent (or held back
// by the storm limit and counted in a coalesced event sent now), or ctx
// ends. Run must be running.
func (n *Notifier) Flush(ctx context.Context) error {
	if n == nil || len(n.o.Sinks) == 0 {
		return nil
	}
	done := make(chan struct{})
	n.mu.Lock()
	n.flushes = append(n.flushes, done)
	n.signal()
	n.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("notify: flush: %w", context.Cause(ctx))
	}
}

// Run sends the queued events until ctx ends, and returns nil then: what
// is still queued is dropped (logged). A send that is under way when ctx
// ends is canceled.
func (n *Notifier) Run(ctx context.Context) error {
	if n == nil {
		return nil
	}
	var sent []time.Time // the sends of the last window, oldest first
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	armed := false
	for {
		select {
		case <-ctx.Done():
			n.mu.Lock()
			left := len(n.queue)
			for _, c := range n.held {
				left += c
			}
			n.queue, n.held = nil, map[Kind]int{}
			n.mu.Unlock()
			if left > 0 {
				n.o.Log.Warn("knotd stops: notifications not sent", "count", left)
			}
			return nil
		case <-n.wake:
		case <-timer.C:
			armed = false
		}
		now := time.Now()
		for len(sent) > 0 && now.Sub(sent[0]) >= window {
			sent = sent[1:]
		}
		n.mu.Lock()
		flushing := len(n.flushes) > 0
		var out []Event
		for len(n.queue) > 0 && len(sent)+len(out) < n.o.PerMinute {
			out = append(out, n.queue[0])
			n.queue = n.queue[1:]
		}
		// What the limit holds back waits for a free slot, counted:
		// there it goes as one event. A flush sends it now.
		for _, e := range n.queue {
			n.held[e.Kind]++
		}
		n.queue = n.queue[:0]
		if len(n.held) > 0 && (len(sent)+len(out) < n.o.PerMinute || flushing) {
			out = append(out, coalesced(n.o.Vault, n.held, now))
			n.held = map[Kind]int{}
		}
		n.full = false
		flushes := n.flushes
		n.flushes = nil
		waiting := len(n.held) > 0
		n.mu.Unlock()
		for _, e := range out {
			n.send(ctx, e)
			sent = append(sent, time.Now())
		}
		for _, f := range flushes {
			close(f)
		}
		if waiting && !armed {
			// The next slot frees when the sends in the window are
			// one fewer than the limit.
			free := time.Now()
			if i := len(sent) - n.o.PerMinute; i >= 0 {
				free = sent[i].Add(window)
			}
			timer.Reset(time.Until(free))
			armed = true
		}
	}
}

// send gives e to every sink, each with the timeout, logging what fails.
func (n *Notifier) send(ctx context.Context, e Event) {
	for _, s := range n.o.Sinks {
		sctx, cancel := context.WithTimeout(ctx, n.o.Timeout)
		err := s.Send(sctx, e)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w (after %v)", err, n.o.Timeout)
			}
			n.o.Log.Warn("cannot notify", "sink", s.Name(), "event", e.ID, "note", e.Note, "err", err)
		}
	}
}
