package vault

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/scheduler"
	"github.com/knotd/knotd/state"
	"github.com/knotd/knotd/strand"
)

// scheduler builds the per-strand scheduler whose work is process. Each
// finished strand is reported to report; a strand that moved on during its
// run is submitted again as its own follow-up. Runs get the grace period
// after ctx ends before they are canceled. The caller must call release
// once the scheduler's Run has returned.
func (v *Vault) scheduler(ctx context.Context, report func(RunReport)) (s *scheduler.Scheduler[Job], release func()) {
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	later := &laterTimers{}
	var mu sync.Mutex
	var timer *time.Timer
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		grace := v.grace
		if v.answering.SteppingDown.Load() {
			grace = 0 // another device answers what these runs were answering
		}
		timer = time.AfterFunc(grace, cancelRuns)
	})
	release = func() {
		later.stop()
		stop()
		mu.Lock()
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancelRuns()
	}
	s = &scheduler.Scheduler[Job]{Concurrency: v.config().Concurrency}
	s.Merge = func(waiting, submitted Job) Job {
		submitted.Force = submitted.Force || waiting.Force
		submitted.ByHand = submitted.ByHand || waiting.ByHand
		return submitted
	}
	s.Work = func(_ context.Context, rel string, job Job) {
		if !job.ByHand && later.hold(rel, job, s.Merge) {
			// The strand failed and its retry waits: this change goes
			// with the retry (the strand is read afresh then), so that
			// a failure that lasts (a full disk) is not met again at
			// every save or pass, only as the pauses allow.
			return
		}
		// This run reads the strand as it is now: a follow-up waiting for
		// an earlier run's changes is done by it.
		later.supersede(rel)
		rep, again, err := v.pipe.process(runCtx, rel, job)
		v.budget.Landed(rel, err == nil && rep.Ran && !v.dry, rep.Usage)
		// From now on the strand's record holds what knotd wrote into
		// it, if anything: the watcher no longer needs telling.
		v.own.forget(rel)
		if err != nil {
			rep.Strand = rel
			rep.Ran, rep.Outcome, rep.Reason = true, agentrun.OutcomeFailed, err.Error()
			var kept *replyKept
			if v.watching.Load() && ctx.Err() == nil && !errors.Is(err, ErrStateDamaged) && !errors.Is(err, state.ErrCorrupt) && !errors.As(err, &kept) {
				// A full disk, too many open files, a strand that kept
				// changing: the change is not dropped; it is tried again
				// after a pause that grows while it keeps failing.
				pause := later.failed(rel)
				v.log.Error("cannot process note; trying again", "strand", rel, "in", pause, "err", err)
				later.after(ctx, rel, pause, func() { s.Submit(rel, later.release(rel, job, s.Merge)) })
			} else {
				v.log.Error("cannot process note", "strand", rel, "err", err)
			}
		} else {
			later.succeeded(rel)
			if rep.Ran && rep.Event != strand.Deleted && !v.dry {
				if why, err := breakerRan(v.store, rel, v.now(), rep.Failed(), v.config().Breakers); err != nil {
					v.log.Error("cannot count the run for the breakers", "strand", rel, "err", err)
				} else if why != "" {
					v.trip(rel, rep, why)
				}
			}
		}
		if rep.Ran || rep.Skipped != "" {
			report(rep)
		}
		if again && ctx.Err() == nil {
			// The strand moved on during the run: while watching, its
			// follow-up waits until it has been quiet for the debounce,
			// like any change, and no longer than max_wait and a debounce
			// after the run; a pass (--once) runs it before it ends. The
			// watcher sees the same writes and hints at them max_wait
			// after the first at the latest: the debounce more leaves it
			// the first word, and the run its hint starts ends this
			// follow-up, so that a note written without a pause runs once
			// per max_wait, not twice within a few milliseconds.
			if v.watching.Load() {
				c := v.config()
				v.followUp(ctx, later, s, rel, Job{FiredBy: job.FiredBy}, v.now().Add(c.MaxWait+c.Debounce))
			} else {
				s.Submit(rel, Job{FiredBy: job.FiredBy})
			}
		}
		v.observe.worked(rel, rep)
	}
	v.observe.scheduled(s)
	return s, release
}

// followUp submits the follow-up of the strand rel once it has been quiet
// (not modified) for the debounce, or at the latest at deadline.
func (v *Vault) followUp(ctx context.Context, later *laterTimers, s *scheduler.Scheduler[Job], rel string, job Job, deadline time.Time) {
	quiet := v.config().Debounce
	wait := quiet
	if info, where, err := v.recon.lstatStrand(rel); err == nil && where == present {
		// The file system's clock, not v.now: the quiet period is
		// measured from the time the file system stamped.
		wait = time.Until(info.ModTime().Add(quiet))
	}
	if wait <= 0 || !v.now().Before(deadline) {
		s.Submit(rel, job)
		return
	}
	wait = min(wait, deadline.Sub(v.now()))
	later.after(ctx, rel, wait, func() { v.followUp(ctx, later, s, rel, job, deadline) })
}

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

// dues are the watch loop's waits that retry with a pause (see backoff):
// each key's value, when it is due, and how many times in a row it has
// been tried. The loop owns them (no lock); its one timer is set to the
// earliest (next).
type dues[T any] struct {
	m map[string]due[T]
}

// due is one wait of dues.
type due[T any] struct {
	val   T
	at    time.Time
	tries int
}

// isDue reports whether key is due at now (a key not waiting is).
func (d *dues[T]) isDue(key string, now time.Time) bool {
	return !now.Before(d.m[key].at)
}

// retry makes key, with val, wait from now for backoff(first, tries),
// tries being how many times it waited before, and returns that pause.
func (d *dues[T]) retry(key string, val T, now time.Time, first time.Duration) time.Duration {
	if d.m == nil {
		d.m = make(map[string]due[T])
	}
	r := d.m[key]
	pause := backoff(first, r.tries)
	d.m[key] = due[T]{val: val, at: now.Add(pause), tries: r.tries + 1}
	return pause
}

// forget forgets key and its tries.
func (d *dues[T]) forget(key string) { delete(d.m, key) }

// keep forgets every key for which keep returns false.
func (d *dues[T]) keep(keep func(key string) bool) {
	for key := range d.m {
		if !keep(key) {
			delete(d.m, key)
		}
	}
}

// dueBy returns the values of the keys due at now, in the keys' order.
func (d *dues[T]) dueBy(now time.Time) []T {
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

// next returns when the earliest key is due.
func (d *dues[T]) next() (time.Time, bool) {
	var next time.Time
	for _, r := range d.m {
		if next.IsZero() || r.at.Before(next) {
			next = r.at
		}
	}
	return next, !next.IsZero()
}
