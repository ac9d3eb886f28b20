package transcript

import "sync/atomic"

// Subscription receives the events a Recorder writes after Subscribe
// returned, through a bounded channel.
//
// Drop policy: when the channel is full, the oldest undelivered event is
// dropped to make room for the new one, and Dropped counts it. A slow
// subscriber therefore sees a gap (visible in seq), never stalls the
// writer, and always gets the newest events, run.finished included. Dropped
// events are still in the file: a subscriber that needs everything reads it
// (ReadFile) for seq up to the first one it missed.
type Subscription struct {
	r       *Recorder
	c       chan Event
	since   int64
	dropped atomic.Int64
}

// Subscribe returns a subscription whose channel holds up to buffer events
// (at least 1). On a closed Recorder the channel is already closed. The
// events must not be modified: they are shared with the other
// subscribers.
func (r *Recorder) Subscribe(buffer int) *Subscription {
	s := &Subscription{r: r, c: make(chan Event, max(buffer, 1))}
	r.mu.Lock()
	defer r.mu.Unlock()
	s.since = r.seq
	if r.closed {
		close(s.c)
		return s
	}
	r.subs[s] = struct{}{}
	return s
}

// C returns the channel of events. It is closed by Close, or by the
// Recorder's Close after the last event.
func (s *Subscription) C() <-chan Event { return s.c }

// Since returns the seq of the last event written before the subscription
// began: the channel carries events Since()+1 onwards, and the file already
// holds 1 to Since().
func (s *Subscription) Since() int64 { return s.since }

// Dropped returns how many events were dropped because the channel was
// full.
func (s *Subscription) Dropped() int64 { return s.dropped.Load() }

// Close ends the subscription and closes its channel; events still in the
// channel can be received. Calling Close again, or after the Recorder's
// Close, does nothing.
func (s *Subscription) Close() {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if _, ok := s.r.subs[s]; ok {
		delete(s.r.subs, s)
		close(s.c)
	}
}

// broadcast hands ev to every subscriber without waiting, dropping a full
// channel's oldest event. The caller holds r.mu, so it is the only sender
// and a channel with one event taken out has room.
func (r *Recorder) broadcast(ev Event) {
	for s := range r.subs {
		select {
		case s.c <- ev:
			continue
		default:
		}
		select {
		case <-s.c:
			s.dropped.Add(1)
		default: // the subscriber emptied it meanwhile
		}
		select {
		case s.c <- ev:
		default:
			s.dropped.Add(1) // unreachable: only senders fill the channel
		}
	}
}
