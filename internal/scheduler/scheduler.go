// Package scheduler runs work per key (a strand's path) under knotd's
// three rules: one run at a time per key, at most one follow-up for
// everything that arrived meanwhile, and a limit across keys.
package scheduler

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// Scheduler runs jobs keyed by strand path under three rules (docs/design.md#what-happens-on-a-change):
//
//   - at most one Work call per key at a time;
//   - jobs submitted for a key while it waits or runs collapse into at
//     most one follow-up run (Merge decides what it carries: by default
//     the newest job);
//   - at most Concurrency Work calls at once across keys, started in the
//     order their keys were first submitted (a key that gets a follow-up
//     goes to the back of the line, so a busy strand cannot starve the
//     others).
//
// It holds one entry per key that is waiting or running, and nothing for
// a key once its work is done, so its memory is bounded by the number of
// strands. Submit never blocks.
//
// The zero value is ready once Work is set. Submit, Stats and WaitIdle
// are safe to call from any goroutine, before, during and after Run.
type Scheduler[J any] struct {
	// Concurrency is the most Work calls that run at once; zero or less
	// means one at a time (the daemon passes the configured concurrency).
	// Run reads it when it starts.
	Concurrency int
	// Work does one job for key. Run calls it from goroutines it owns and
	// waits for; ctx is Run's context, so Work must return soon after ctx
	// is done. (To give an agent a grace period, run it under
	// context.WithoutCancel(ctx) and cancel that a grace period after ctx
	// is done.) A job that Work submits for its own key before returning
	// becomes that key's follow-up, and the scheduler is never seen idle
	// in between.
	Work func(ctx context.Context, key string, job J)
	// Merge, if set, combines the job already waiting for a key with a
	// newly submitted one; nil keeps the newer job.
	Merge func(waiting, submitted J) J

	mu      sync.Mutex
	entries map[string]*schedEntry[J]
	queue   keyQueue
	waiting int // entries with a job waiting
	running int
	active  bool          // Run is in progress
	wake    chan struct{} // nudges Run; capacity 1
	idle    chan struct{} // closed (and cleared) when entries empties
}

// schedEntry is the state of one key: a job waiting (in the queue, or as
// the follow-up of a running job), a job running, or both.
type schedEntry[J any] struct {
	job     J
	waiting bool
	running bool
}

// errSchedulerRunning is returned by Run when another Run is in progress.
var errSchedulerRunning = errors.New("scheduler: already running")

// Entry is one key in a Snapshot: waiting with Job, or Running. A
// running key's Job is that of its follow-up when FollowUp says one
// waits behind it, and the zero job otherwise.
type Entry[J any] struct {
	Key      string
	Job      J
	Running  bool
	FollowUp bool
}

// Snapshot returns the keys that run now, then those waiting to start
// in the order they will start (a running key's follow-up is not
// queued: FollowUp says it waits). The jobs are copies; the scheduler
// goes on meanwhile.
func (s *Scheduler[J]) Snapshot() []Entry[J] {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Entry[J], 0, len(s.entries))
	for k, e := range s.entries {
		if e.running {
			out = append(out, Entry[J]{Key: k, Job: e.job, Running: true, FollowUp: e.waiting})
		}
	}
	slices.SortFunc(out, func(a, b Entry[J]) int { return strings.Compare(a.Key, b.Key) })
	for _, k := range s.queue.keys[s.queue.head:] {
		out = append(out, Entry[J]{Key: k, Job: s.entries[k].job})
	}
	return out
}

// Submitted says what Submit did with a job.
type Submitted int

const (
	// Queued: the key waits for its turn.
	Queued Submitted = iota
	// FollowUp: the key is running; the job waits behind its run.
	FollowUp
	// Merged: the key already had a job waiting; the job joined it.
	Merged
)

// Submit asks for a run of key with job. If key already has a job
// waiting, the two are merged into one; if key is running, the job
// becomes its follow-up. Submit never blocks; it says which it did.
func (s *Scheduler[J]) Submit(key string, job J) Submitted {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = make(map[string]*schedEntry[J])
	}
	e := s.entries[key]
	if e == nil {
		e = &schedEntry[J]{}
		s.entries[key] = e
	}
	switch {
	case e.waiting && s.Merge != nil:
		e.job = s.Merge(e.job, job)
		return Merged
	case e.waiting:
		e.job = job
		return Merged
	}
	e.job, e.waiting = job, true
	s.waiting++
	if e.running {
		return FollowUp
	}
	s.queue.push(key)
	s.nudge()
	return Queued
}

// WaitIdle blocks until no key is waiting or running, or ctx is done (it
// then returns ctx.Err()). It returns at once if the scheduler is idle,
// so submit first, then wait: this is how `knotd --once` runs until all
// pending work, follow-ups included, is done. Jobs left waiting when Run
// stops keep the scheduler from being idle.
func (s *Scheduler[J]) WaitIdle(ctx context.Context) error {
	s.mu.Lock()
	if len(s.entries) == 0 {
		s.mu.Unlock()
		return nil
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run starts queued jobs as the concurrency limit allows until ctx is
// done. It then starts nothing more, waits for the Work calls in progress
// to return, and returns ctx.Err(); jobs still waiting stay queued for a
// later Run. Only one Run may be in progress at a time.
func (s *Scheduler[J]) Run(ctx context.Context) error {
	if s.Work == nil {
		return errors.New("scheduler: no Work function")
	}
	s.mu.Lock()
	if s.active {
		s.mu.Unlock()
		return errSchedulerRunning
	}
	s.active = true
	if s.wake == nil {
		s.wake = make(chan struct{}, 1)
	}
	wake := s.wake
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.active = false
		s.mu.Unlock()
	}()

	limit := s.Concurrency
	if limit <= 0 {
		limit = 1
	}
	var wg sync.WaitGroup
	for {
		s.mu.Lock()
		for ctx.Err() == nil && s.running < limit && s.queue.len() > 0 {
			key := s.queue.pop()
			e := s.entries[key]
			job := e.job
			var zero J
			e.job, e.waiting, e.running = zero, false, true
			s.waiting--
			s.running++
			wg.Go(func() {
				s.Work(ctx, key, job)
				s.finish(key)
			})
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		case <-wake:
		}
	}
}

// finish records the end of key's run: its follow-up, if any, goes to the
// back of the queue; otherwise the key is forgotten.
func (s *Scheduler[J]) finish(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	e.running = false
	s.running--
	if e.waiting {
		s.queue.push(key)
	} else {
		delete(s.entries, key)
		if len(s.entries) == 0 && s.idle != nil {
			close(s.idle)
			s.idle = nil
		}
	}
	s.nudge()
}

// nudge wakes Run without blocking; s.mu must be held.
func (s *Scheduler[J]) nudge() {
	if s.wake == nil {
		s.wake = make(chan struct{}, 1)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// keyQueue is a FIFO of keys. Each key is in it at most once (the
// scheduler's entries guarantee it), so it never holds more keys than
// there are strands.
type keyQueue struct {
	keys []string
	head int
}

func (q *keyQueue) len() int { return len(q.keys) - q.head }

func (q *keyQueue) push(k string) { q.keys = append(q.keys, k) }

func (q *keyQueue) pop() string {
	k := q.keys[q.head]
	q.keys[q.head] = ""
	q.head++
	switch {
	case q.head == len(q.keys):
		q.keys, q.head = q.keys[:0], 0
	case q.head >= 1024 && q.head*2 >= len(q.keys):
		n := copy(q.keys, q.keys[q.head:])
		clear(q.keys[n:])
		q.keys, q.head = q.keys[:n], 0
	}
	return k
}
