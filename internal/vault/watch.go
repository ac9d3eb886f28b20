package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/vault/internal/loop"
	"github.com/knotd/knotd/internal/vault/internal/reconcile"
	"github.com/knotd/knotd/internal/watcher"
)

// WatchOptions configures Watch.
type WatchOptions struct {
	// All runs every strand once at startup (--all).
	All bool
	// TakeOver makes this device the vault's answering device, whichever
	// device answered it before (--take-over).
	TakeOver bool
}

// ErrStandby is wrapped by errors about work a standby device refuses.
var ErrStandby = errors.New("another device answers this vault")

// Watch watches the vault until ctx ends, answering it while this device
// is the answering device and standing by otherwise: it decides at the
// start and at every heartbeat (answer.Device.Serve). A device that
// another device takes over from stops taking changes, lets its running
// agents finish (as on a stop) and stands by; a standby device that
// becomes the answering device catches up on every change the answering
// device left unanswered (the tie-off markers say what it answered) and
// answers from then on. See answerWatch for the rest. It returns nil when
// ctx ends.
func (v *Vault) Watch(ctx context.Context, opts WatchOptions) error {
	defer v.answering.StopBeat()
	v.watching.Store(true)
	defer v.watching.Store(false)
	// First contact comes first, answering or not (see Once).
	if _, seen, err := v.store.Adopted(); err != nil {
		return err
	} else if !seen && !opts.All {
		if _, err := v.adoption.firstContact(); err != nil {
			return err
		}
	}
	return v.answering.Serve(ctx, opts.TakeOver, v.standBy, func(ctx context.Context) error {
		err := v.answerWatch(ctx, opts)
		opts.All = false // --all ran once, when this device first answered
		return err
	})
}

// standBy waits one heartbeat, or returns when ctx ends.
func (v *Vault) standBy(ctx context.Context) error {
	v.reloader.reloadIfChanged()
	t := time.NewTimer(v.answering.Heartbeat())
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-v.store.Damaged():
		return v.stateDamaged()
	}
	return nil
}

// answerWatch is Watch while this device answers the vault, until ctx
// ends: the startup catch-up, then every settled change, overflow rescans
// and, when configured, polling. When ctx ends it stops taking events,
// lets running agents finish within the grace period, kills what remains
// and returns nil. It returns an error if the vault directory disappears
// or watching cannot start.
//
// A strand that is gone is processed as Deleted one quiet period after
// its hint, and a new strand (one knotd has no record of) as Created one
// quiet period after its hint: a move reaches the watcher as two paths
// that may settle in separate hints, a quiet period apart at most, and
// the two are paired before either runs (package loop): the history
// moves, and nothing runs.
func (v *Vault) answerWatch(ctx context.Context, opts WatchOptions) error {
	// On first contact adopt; with --all run everything. The catch-up on
	// changes made while knotd was stopped is the watcher's first full
	// rescan, sent once its watches are in place, so nothing falls between
	// the catch-up and the watch.
	_, seen, err := v.store.Adopted()
	if err != nil {
		return err
	}
	var all []string
	switch {
	case opts.All:
		if all, _, err = v.adoption.catchUp(true); err != nil {
			return err
		}
	case !seen:
		// The strands changed since their last answer are found
		// by the startup rescan, like any change made while knotd was
		// stopped.
		if _, err := v.adoption.firstContact(); err != nil {
			return err
		}
	}
	// The scheduler stops when ctx ends or when watching ends on its own
	// (the vault directory is gone): a knotd that can no longer see
	// changes must say so and exit, not wait for a signal in silence.
	schedCtx, stopSched := context.WithCancel(ctx)
	defer stopSched()
	var processed atomic.Int64 // work the scheduler finished
	s, release := v.scheduler(schedCtx, func(RunReport) { processed.Add(1) })
	defer release()
	v.live.Store(s)
	defer v.live.Store(nil)
	for _, rel := range all {
		s.Submit(rel, Job{FiredBy: agentrun.FiredByCatchUp, Force: true})
	}
	for _, rel := range v.answeredStrands() {
		s.Submit(rel, Job{FiredBy: agentrun.FiredByAnswer})
	}

	hints := make(chan watcher.Hint, 256)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var wg sync.WaitGroup
	var schedErr, watchErr error
	wg.Go(func() { schedErr = s.Run(schedCtx) })
	wg.Go(func() { v.runSchedules(schedCtx, s) })
	if v.config().Poll > 0 {
		p := &watcher.Poller{Interval: v.config().Poll}
		wg.Go(func() { watchErr = p.Run(watchCtx, hints) })
		v.log.Info("watching by polling", "vault", v.root, "interval", v.config().Poll)
	} else {
		w := &watcher.Watcher{
			Root: v.root, Quiet: v.config().Debounce, MaxWait: v.config().MaxWait,
			Filter: v.pipe.Watched, Rules: v.rules, Logger: v.log,
		}
		wg.Go(func() { watchErr = w.Run(watchCtx, hints) })
		v.log.Info("watching", "vault", v.root, "debounce", v.config().Debounce, "agent", v.config().DefaultAgent)
	}

	rootInfo, err := os.Stat(v.root)
	if err != nil {
		stopWatch()
		stopSched()
		wg.Wait()
		return fmt.Errorf("vault: watch %s: %w", v.root, err)
	}
	loopErr := newLoop(v, s, v.config().Debounce, rootInfo, &processed).Run(hints)
	stopWatch()
	stopSched()
	wg.Wait()
	if errors.Is(loopErr, ErrStateDamaged) {
		v.log.Error("stopped: the state store is damaged", "vault", v.root, "err", loopErr)
		return loopErr
	}
	if loopErr != nil {
		v.log.Error("stopped: the vault directory is gone", "vault", v.root, "err", loopErr)
		return fmt.Errorf("vault: watch %s: %w", v.root, loopErr)
	}
	if watchErr != nil {
		return fmt.Errorf("vault: watch %s: %w", v.root, watchErr)
	}
	if schedErr != nil && !errors.Is(schedErr, context.Canceled) {
		return schedErr
	}
	v.log.Info("stopped", "vault", v.root)
	return nil
}

// ErrVaultGone is wrapped by Watch's error when the vault directory was
// deleted, moved, replaced or unmounted while knotd watched it.
var ErrVaultGone = loop.ErrVaultGone

// rootCheck is how often the watch loop checks, when nothing happens,
// that the vault directory is still there and retries journaled runs.
const rootCheck = loop.DefaultEvery

// newLoop returns the watch loop that feeds s; gone and new strands wait
// for delay, and processed counts the work s finished.
func newLoop(v *Vault, s *scheduler.Scheduler[Job], delay time.Duration, rootInfo fs.FileInfo, processed *atomic.Int64) *loop.Loop {
	return loop.New(loopHost{v: v, s: s}, loop.Options{Root: v.root, RootInfo: rootInfo, Delay: delay, Every: v.checkEvery, Processed: processed})
}

// loopHost is what the watch loop asks of the vault (see loop.Host), and
// the scheduler it feeds.
type loopHost struct {
	v *Vault
	s *scheduler.Scheduler[Job]
}

func (h loopHost) Now() time.Time    { return h.v.now() }
func (h loopHost) Log() *slog.Logger { return h.v.log }
func (h loopHost) Reconcile(hints []watcher.Hint) (changed, unlooked []string, err error) {
	return h.v.recon.ReconcileAll(hints)
}

func (h loopHost) Gone(rel string) bool {
	_, where, err := h.v.recon.LstatStrand(rel)
	return err == nil && where == reconcile.Absent
}

func (h loopHost) New(rel string) bool {
	_, has, err := h.v.store.Get(rel)
	return err == nil && !has
}

// Own: see ownWrites; a conflict copy of the strand's note or tie-off
// that a sync tool made meanwhile (of that very write, say) is folded
// back by the processing the change is submitted for.
func (h loopHost) Own(rel string) bool {
	info, where, err := h.v.recon.LstatStrand(rel)
	return err == nil && where == reconcile.Present && h.v.own.is(rel, info) && !h.v.recon.Pending(rel)
}

func (h loopHost) Submit(rel string, fired agentrun.FiredBy) {
	if h.v.hasWaiter(rel) {
		// A run of the note waits for an answer (an ACP agent asked): the
		// note's knot_answer reaches it now, not once the run is over.
		h.v.noteAnswers(rel, false)
	}
	h.s.Submit(rel, Job{FiredBy: fired})
}

func (h loopHost) Journaled() ([]string, error) {
	ps, err := h.v.store.Pendings()
	paths := make([]string, len(ps))
	for i, p := range ps {
		paths[i] = p.Record.Path
	}
	return paths, err
}

func (h loopHost) AllowedDeferred() []string                    { return h.v.budget.AllowedDeferred() }
func (h loopHost) ReleaseMemory()                               { h.v.releaseMemory() }
func (h loopHost) ReloadIfChanged()                             { h.v.reloader.reloadIfChanged() }
func (h loopHost) Damaged() <-chan struct{}                     { return h.v.store.Damaged() }
func (h loopHost) StateDamaged() error                          { return h.v.stateDamaged() }
func (h loopHost) Looped(waiting int)                           { h.v.observe.looped(waiting) }
func (h loopHost) Reconciled(hs []watcher.Hint, paths []string) { h.v.observe.reconciled(hs, paths) }

// releaseMemory gives back what a pass over the whole vault held: the
// state file's pages it mapped and the heap it freed. Without it an idle
// daemon keeps the high-water mark of its last full pass for as long as it
// runs (the Go runtime returns freed heap only gradually).
//
// It is the one caller of debug.FreeOSMemory in knotd, and the watch
// loop calls it at most once a check interval (package loop: after a
// pass, or after work). In the bench at 100,000 strands the call is the
// difference between 20 and 52 MiB resident (13 and 45 MiB anonymous)
// 12 s after start-up, and 21 against 28 MiB a minute later;
// TestRuntime_KeepsFreedHeapUntilFreeOSMemory fails when the runtime no
// longer behaves in the way that makes it worth its garbage collection.
func (v *Vault) releaseMemory() {
	if err := v.store.DropMapped(); err != nil {
		v.log.Warn("cannot release the state file's mapped pages; they stay resident", "err", err)
	}
	debug.FreeOSMemory()
	v.observe.released()
}
