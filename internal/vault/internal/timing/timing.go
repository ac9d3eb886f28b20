// Package timing is knotd's timed work, written once: the waits of the
// watch loop, which retry or wait for a delay (Dues), the delayed
// submissions of a scheduler (follow-ups that wait for a strand to be
// quiet, retries after a failure; Later, which waits in Dues too), and
// the one pause every retry waits (Backoff).
package timing

import (
	"context"
	"iter"
	"slices"
	"sync"
	"time"
)

// MaxPause bounds the pause between two tries of anything that failed.
const MaxPause = 5 * time.Minute

// Later are a scheduler's delayed submissions of work J, one per strand (a
// newer one replaces it), with each strand's run of failures. They wait in
// Dues, on one timer set to the earliest. The scheduler's release stops
// them all. Its methods are safe for concurrent use; the zero value is
// ready.
type Later[J any] struct {
	mu       sync.Mutex
	calls    Dues[laterCall] // the submissions that wait, by strand
	timer    *time.Timer     // calls the submissions due; nil until the first
	failures map[string]int
	held     map[string]J // work held for a failed strand's retry
	stopped  bool
}

// laterCall is one delayed submission of Later.
type laterCall struct {
	rel    string
	ctx    context.Context
	submit func()
}

// Hold keeps job for the retry of the strand rel if it failed and its
// retry waits, merged with what is held already, and reports whether it
// did.
func (l *Later[J]) Hold(rel string, job J, merge func(waiting, submitted J) J) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, _, waits := l.calls.Get(rel); !waits || l.failures[rel] == 0 {
		return false
	}
	if l.held == nil {
		l.held = make(map[string]J)
	}
	if h, ok := l.held[rel]; ok {
		job = merge(h, job)
	}
	l.held[rel] = job
	return true
}

// Release returns job merged with the work held for the strand rel's
// retry, and forgets it.
func (l *Later[J]) Release(rel string, job J, merge func(waiting, submitted J) J) J {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[rel]; ok {
		job = merge(job, h)
		delete(l.held, rel)
	}
	return job
}

// After calls submit after d, unless ctx is done by then or the timers
// are stopped; it replaces the strand's pending call, if any.
func (l *Later[J]) After(ctx context.Context, rel string, d time.Duration, submit func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || ctx.Err() != nil {
		return
	}
	l.calls.Forget(rel)
	l.calls.Wait(rel, laterCall{rel: rel, ctx: ctx, submit: submit}, time.Now().Add(d))
	l.arm()
}

// arm sets the timer to the earliest call, if any; l.mu is held.
func (l *Later[J]) arm() {
	next, ok := l.calls.Next()
	switch {
	case !ok || l.stopped:
		if l.timer != nil {
			l.timer.Stop()
		}
	case l.timer == nil:
		l.timer = time.AfterFunc(time.Until(next), l.fire)
	default:
		l.timer.Reset(time.Until(next))
	}
}

// fire makes the calls that are due, in the order of their strands, and
// sets the timer to the next.
func (l *Later[J]) fire() {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	due := l.calls.DueBy(time.Now())
	for _, c := range due {
		l.calls.Forget(c.rel)
	}
	l.arm()
	l.mu.Unlock()
	for _, c := range due {
		if c.ctx.Err() == nil {
			c.submit()
		}
	}
}

// Supersede stops the strand's follow-up if one waits (not a retry after
// a failure, which holds the work that waits for it).
func (l *Later[J]) Supersede(rel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, _, ok := l.calls.Get(rel); ok && l.failures[rel] == 0 {
		l.calls.Forget(rel)
		l.arm()
	}
}

// Failed counts a failure of the strand and returns the pause before it
// is tried again: a second, doubling up to MaxPause.
func (l *Later[J]) Failed(rel string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failures == nil {
		l.failures = make(map[string]int)
	}
	n := l.failures[rel]
	l.failures[rel] = n + 1
	return Backoff(time.Second, n)
}

// Succeeded forgets the strand's failures.
func (l *Later[J]) Succeeded(rel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.failures, rel)
}

// Stop stops every pending call.
func (l *Later[J]) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	l.calls.Keep(func(string) bool { return false })
	l.arm()
}

// Backoff is the pause before trying again what failed tries times in a
// row: first, doubling with each failure, up to MaxPause. Every retry
// that waits longer while its failure lasts (a strand, a hint, a journaled
// run, a journal write) waits by it.
func Backoff(first time.Duration, tries int) time.Duration {
	return min(first<<min(tries, 20), MaxPause)
}

// Dues are timed work waiting: what retries with a pause (Retry, see
// Backoff) and what waits for a fixed delay (Wait). Each key has a value,
// when it is due, and how many times in a row it has been tried. Their
// owner keeps one timer set to the earliest (Next) and serialises their
// use: the watch loop's goroutine, Later's lock.
type Dues[T any] struct {
	m map[string]due[T]
}

// due is one wait of Dues.
type due[T any] struct {
	val   T
	at    time.Time
	tries int
}

// IsDue reports whether key is due at now (a key not waiting is).
func (d *Dues[T]) IsDue(key string, now time.Time) bool {
	return !now.Before(d.m[key].at)
}

// Retry makes key, with val, wait from now for Backoff(first, tries),
// tries being how many times it waited before, and returns that pause.
func (d *Dues[T]) Retry(key string, val T, now time.Time, first time.Duration) time.Duration {
	if d.m == nil {
		d.m = make(map[string]due[T])
	}
	r := d.m[key]
	pause := Backoff(first, r.tries)
	d.m[key] = due[T]{val: val, at: now.Add(pause), tries: r.tries + 1}
	return pause
}

// Wait makes key, with val, due at at, unless it waits already (then its
// value and time stay as they are).
func (d *Dues[T]) Wait(key string, val T, at time.Time) {
	if _, waiting := d.m[key]; waiting {
		return
	}
	if d.m == nil {
		d.m = make(map[string]due[T])
	}
	d.m[key] = due[T]{val: val, at: at}
}

// Get returns key's value and when it is due, if it waits.
func (d *Dues[T]) Get(key string) (val T, at time.Time, ok bool) {
	r, ok := d.m[key]
	return r.val, r.at, ok
}

// Len returns how many keys wait.
func (d *Dues[T]) Len() int { return len(d.m) }

// All yields every waiting key and when it is due, in no order.
func (d *Dues[T]) All() iter.Seq2[string, time.Time] {
	return func(yield func(string, time.Time) bool) {
		for key, r := range d.m {
			if !yield(key, r.at) {
				return
			}
		}
	}
}

// Forget forgets key and its tries.
func (d *Dues[T]) Forget(key string) { delete(d.m, key) }

// Keep forgets every key for which keep returns false.
func (d *Dues[T]) Keep(keep func(key string) bool) {
	for key := range d.m {
		if !keep(key) {
			delete(d.m, key)
		}
	}
}

// DueBy returns the values of the keys due at now, in the keys' order.
func (d *Dues[T]) DueBy(now time.Time) []T {
	var keys []string
	for key, r := range d.m {
		if !r.at.After(now) {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	out := make([]T, len(keys))
	for i, key := range keys {
		out[i] = d.m[key].val
	}
	return out
}

// Next returns when the earliest key is due.
func (d *Dues[T]) Next() (time.Time, bool) {
	var next time.Time
	for _, r := range d.m {
		if next.IsZero() || r.at.Before(next) {
			next = r.at
		}
	}
	return next, !next.IsZero()
}

// Earliest returns the earliest of the times ts that are not zero, if
// any.
func Earliest(ts ...time.Time) (time.Time, bool) {
	var next time.Time
	for _, t := range ts {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next, !next.IsZero()
}
