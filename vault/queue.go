package vault

import (
	"context"
	"sync"
	"time"
)

// laterTimers are the scheduler's delayed submissions, one per strand (a
// newer one replaces it), with each strand's run of failures. The
// scheduler's release stops them all.
type laterTimers struct {
	mu       sync.Mutex
	timers   map[string]*time.Timer
	failures map[string]int
	held     map[string]Job // work held for a failed strand's retry
	stopped  bool
}

// hold keeps job for the retry of the strand rel if it failed and its
// retry waits, merged with what is held already, and reports whether it
// did.
func (l *laterTimers) hold(rel string, job Job, merge func(waiting, submitted Job) Job) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, waits := l.timers[rel]; !waits || l.failures[rel] == 0 {
		return false
	}
	if l.held == nil {
		l.held = make(map[string]Job)
	}
	if h, ok := l.held[rel]; ok {
		job = merge(h, job)
	}
	l.held[rel] = job
	return true
}

// release returns job merged with the work held for the strand rel's
// retry, and forgets it.
func (l *laterTimers) release(rel string, job Job, merge func(waiting, submitted Job) Job) Job {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[rel]; ok {
		job = merge(job, h)
		delete(l.held, rel)
	}
	return job
}

// after calls submit after d, unless ctx is done by then or the timers
// are stopped; it replaces the strand's pending call, if any.
func (l *laterTimers) after(ctx context.Context, rel string, d time.Duration, submit func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || ctx.Err() != nil {
		return
	}
	if l.timers == nil {
		l.timers = make(map[string]*time.Timer)
	}
	if t, ok := l.timers[rel]; ok {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		l.mu.Lock()
		mine := l.timers[rel] == t && !l.stopped
		if mine {
			delete(l.timers, rel)
		}
		l.mu.Unlock()
		if mine && ctx.Err() == nil {
			submit()
		}
	})
	l.timers[rel] = t
}

// supersede stops the strand's follow-up if one waits (not a retry after
// a failure, which holds the work that waits for it).
func (l *laterTimers) supersede(rel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.timers[rel]; ok && l.failures[rel] == 0 {
		t.Stop()
		delete(l.timers, rel)
	}
}

// failed counts a failure of the strand and returns the pause before it
// is tried again: a second, doubling up to maxRetryPause.
func (l *laterTimers) failed(rel string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failures == nil {
		l.failures = make(map[string]int)
	}
	n := l.failures[rel]
	l.failures[rel] = n + 1
	return backoff(time.Second, n)
}

// succeeded forgets the strand's failures.
func (l *laterTimers) succeeded(rel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.failures, rel)
}

// stop stops every pending call.
func (l *laterTimers) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	for rel, t := range l.timers {
		t.Stop()
		delete(l.timers, rel)
	}
}

// backoff is the pause before trying again what failed tries times in a
// row: first, doubling with each failure, up to maxRetryPause. Every retry
// that waits longer while its failure lasts (a strand, a hint, a journaled
// run, a journal write) waits by it.
func backoff(first time.Duration, tries int) time.Duration {
	return min(first<<min(tries, 20), maxRetryPause)
}
