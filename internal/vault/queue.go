package vault

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/vault/internal/pipeline"
	"github.com/knotd/knotd/internal/vault/internal/reconcile"
	"github.com/knotd/knotd/internal/vault/internal/timing"
)

// maxRetryPause bounds the pause between two tries of a strand whose
// processing failed for a passing reason (or of a journaled run).
const maxRetryPause = timing.MaxPause

// scheduler builds the per-strand scheduler whose work is the
// pipeline's Process. Each finished strand is reported to report; a
// strand that moved on during its run is submitted again as its own
// follow-up. Runs get the grace period after ctx ends before they are
// canceled. The caller must call release once the scheduler's Run has
// returned.
func (v *Vault) scheduler(ctx context.Context, report func(RunReport)) (s *scheduler.Scheduler[Job], release func()) {
	runCtx, cancelRuns := context.WithCancel(context.WithoutCancel(ctx))
	later := &timing.Later[Job]{}
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
		later.Stop()
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
		if submitted.Scheduled == nil {
			// A change and a schedule's occurrence: one run, Scheduled,
			// on the latest content.
			submitted.Scheduled = waiting.Scheduled
		}
		return submitted
	}
	s.Work = func(_ context.Context, rel string, job Job) {
		if !job.ByHand && later.Hold(rel, job, s.Merge) {
			// The strand failed and its retry waits: this change goes
			// with the retry (the strand is read afresh then), so that
			// a failure that lasts (a full disk) is not met again at
			// every save or pass, only as the pauses allow.
			return
		}
		// This run reads the strand as it is now: a follow-up waiting for
		// an earlier run's changes is done by it.
		later.Supersede(rel)
		rep, again, err := v.pipe.Process(runCtx, rel, job)
		v.budget.Landed(rel, err == nil && rep.Ran && !v.dry, rep.Usage)
		// From now on the strand's record holds what knotd wrote into
		// it, if anything: the watcher no longer needs telling.
		v.own.forget(rel)
		// A failure is told before the pause a breaker makes of it.
		v.tellWorked(ctx, rel, rep, err)
		if err != nil {
			rep.Strand = rel
			rep.Ran, rep.Outcome, rep.Reason = true, agentrun.OutcomeFailed, err.Error()
			var kept *pipeline.ReplyKept
			if v.watching.Load() && ctx.Err() == nil && !errors.Is(err, ErrStateDamaged) && !errors.Is(err, state.ErrCorrupt) && !errors.As(err, &kept) {
				// A full disk, too many open files, a strand that kept
				// changing: the change is not dropped; it is tried again
				// after a pause that grows while it keeps failing.
				pause := later.Failed(rel)
				v.log.Error("cannot process note; trying again", "strand", rel, "in", pause, "err", err)
				later.After(ctx, rel, pause, func() { s.Submit(rel, later.Release(rel, job, s.Merge)) })
			} else {
				v.log.Error("cannot process note", "strand", rel, "err", err)
			}
		} else {
			later.Succeeded(rel)
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
func (v *Vault) followUp(ctx context.Context, later *timing.Later[Job], s *scheduler.Scheduler[Job], rel string, job Job, deadline time.Time) {
	quiet := v.config().Debounce
	wait := quiet
	if info, where, err := v.recon.LstatStrand(rel); err == nil && where == reconcile.Present {
		// The file system's clock, not v.now: the quiet period is
		// measured from the time the file system stamped.
		wait = time.Until(info.ModTime().Add(quiet))
	}
	if wait <= 0 || !v.now().Before(deadline) {
		s.Submit(rel, job)
		return
	}
	wait = min(wait, deadline.Sub(v.now()))
	later.After(ctx, rel, wait, func() { v.followUp(ctx, later, s, rel, job, deadline) })
}
