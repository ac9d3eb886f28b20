package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/vault/internal/timing"
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
// start and at every heartbeat. A device that another device takes over
// from stops taking changes, lets its running agents finish (as on a stop)
// and stands by; a standby device that becomes the answering device
// catches up on every change the answering device left unanswered (the
// tie-off markers say what it answered) and answers from then on. See
// answerWatch for the rest. It returns nil when ctx ends.
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
	takeOver := opts.TakeOver
	var said string
	for {
		d, _ := v.answering.Decide(takeOver) // a heartbeat that cannot be written is said, and tried again
		takeOver = false
		if d.Why != said {
			if d.Answer {
				v.log.Info("this device answers the vault", "device", v.device.Name, "why", d.Why)
			} else {
				v.log.Warn("this device stands by: "+d.Why, "device", v.device.Name)
				if d.Unanswered != "" {
					v.log.Error("nobody may answer this vault: "+d.Unanswered, "device", v.device.Name)
				}
			}
			said = d.Why
		}
		if !d.Answer {
			if err := v.standBy(ctx); err != nil || ctx.Err() != nil {
				return err
			}
			continue
		}
		v.answering.WaitHandover(ctx, d.From)
		if ctx.Err() != nil {
			return nil
		}
		answerCtx, stepDown := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { v.answering.KeepAnswering(answerCtx, stepDown, &said) })
		err := v.answerWatch(answerCtx, opts)
		stepDown()
		wg.Wait()
		v.answering.SteppingDown.Store(false)
		if err != nil || ctx.Err() != nil {
			return err
		}
		opts.All = false // --all ran once, when this device first answered
	}
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
// the two are paired before either runs (see watchLoop.due): the history
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

	hints := make(chan watcher.Hint, 256)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var wg sync.WaitGroup
	var schedErr, watchErr error
	wg.Go(func() { schedErr = s.Run(schedCtx) })
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
	delay := v.config().Debounce
	if delay <= 0 {
		delay = watcher.DefaultQuiet
	}
	l := newWatchLoop(v, s, delay)
	l.root, l.processed = rootInfo, &processed
	loopErr := l.run(hints)
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

// watchLoop turns the watcher's hints into scheduled work. It is owned by
// Watch's goroutine.
type watchLoop struct {
	v     *Vault
	s     *scheduler.Scheduler[Job]
	delay time.Duration             // how long a gone or new strand waits
	gone  map[string]goneStrand     // gone strands waiting for their delay
	fresh map[string]goneStrand     // new strands waiting for their delay
	retry timing.Dues[watcher.Hint] // hints whose reconcile failed, tried again after a pause
	// journaled are the strands with runs still journaled (their reply
	// could not be appended or committed: a full disk): when each is
	// tried again, with a pause that doubles while it stays journaled.
	journaled timing.Dues[struct{}]
	firstFull bool
	root      fs.FileInfo // the vault directory when watching began; nil: not checked
	// processed counts the work the scheduler finished; released is its
	// value when memory was last given back.
	processed *atomic.Int64
	released  int64
	// every is the interval of the loop's checks; lastRelease is when
	// memory was last given back, and releaseDue says a full pass since
	// then left some to give back at the next check.
	every       time.Duration
	lastRelease time.Time
	releaseDue  bool
}

// newWatchLoop returns the loop that feeds s, where gone and new strands
// wait for delay.
func newWatchLoop(v *Vault, s *scheduler.Scheduler[Job], delay time.Duration) *watchLoop {
	return &watchLoop{v: v, s: s, delay: delay, gone: map[string]goneStrand{}, fresh: map[string]goneStrand{}, firstFull: true, processed: new(atomic.Int64)}
}

// rootCheck is how often the loop checks, when nothing happens, that the
// vault directory is still there (an unmount sends no event, and a
// deletion may send none for the directory itself while knotd holds
// files open in it) and retries the runs still journaled because a write
// failed (a full disk that has room again).
const rootCheck = 10 * time.Second

// ErrVaultGone is wrapped by Watch's error when the vault directory was
// deleted, moved, replaced or unmounted while knotd watched it.
var ErrVaultGone = errors.New("vault directory is gone")

// retryJournaled schedules the strands whose runs are still journaled:
// their processing appends each reply once (finishJournaled) and runs
// nothing unless the strand changed again. A strand is tried at the first
// check that finds it journaled, then after pauses that double while it
// stays journaled (two checks, four, …), up to maxRetryPause: a disk that
// stays full is not written to, nor logged about, every check forever.
func (l *watchLoop) retryJournaled() {
	ps, err := l.v.store.Pendings()
	if err != nil {
		l.v.log.Error("cannot read the journal of unfinished runs; retrying later", "err", err)
		return
	}
	now := l.v.now()
	still := make(map[string]bool, len(ps))
	for _, p := range ps {
		rel := p.Record.Path
		if still[rel] {
			continue
		}
		still[rel] = true
		if !l.journaled.IsDue(rel, now) {
			continue
		}
		l.journaled.Retry(rel, struct{}{}, now, l.every)
		l.s.Submit(rel, Job{FiredBy: agentrun.FiredByRescan})
	}
	l.journaled.Keep(func(rel string) bool { return still[rel] }) // the others finished
}

// releaseAfterWork gives memory back at each check after work was done:
// runs map the state file's pages of every strand they touch (a burst over
// a large vault, a sync tool bringing in thousands of notes, maps page
// after page of it) and grow the heap. Releasing while work goes on bounds
// what is resident to what the work of one check interval touched, and an
// idle daemon keeps none of it.
func (l *watchLoop) releaseAfterWork() {
	if n := l.processed.Load(); n != l.released || l.releaseDue {
		l.released = n
		l.release()
	}
}

// releaseAfterPass gives memory back after a pass over the whole vault: at
// once, unless memory was given back less than a check interval ago; then
// at the next check. Passes can come every 100 ms (--poll 100ms), and each
// release forces a garbage collection: this keeps it to one a check.
func (l *watchLoop) releaseAfterPass() {
	if !l.lastRelease.IsZero() && l.v.now().Sub(l.lastRelease) < l.every {
		l.releaseDue = true
		return
	}
	l.release()
}

func (l *watchLoop) release() {
	l.lastRelease, l.releaseDue = l.v.now(), false
	l.v.releaseMemory()
}

// rootGone reports an error wrapping ErrVaultGone if the vault directory
// is no longer the one Watch began with.
func (l *watchLoop) rootGone() error {
	if l.root == nil {
		return nil
	}
	fi, err := os.Stat(l.v.root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %w", ErrVaultGone, err)
	case err != nil:
		return nil // a transient error: the next turn looks again
	case !os.SameFile(fi, l.root):
		return fmt.Errorf("%w: another directory is at its path", ErrVaultGone)
	}
	return nil
}

// goneStrand is a strand that reconcile found gone, or new, waiting to be
// looked at again.
type goneStrand struct {
	due   time.Time
	fired agentrun.FiredBy
}

// run handles hints until the channel is closed (it returns nil) or the
// vault directory is gone (it returns an error wrapping ErrVaultGone,
// before it reconciles anything: the strands are not deleted, the vault
// is).
func (l *watchLoop) run(hints <-chan watcher.Hint) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	l.every = l.v.checkEvery
	check := time.NewTicker(l.every)
	defer check.Stop()
	for {
		var batch []watcher.Hint
		select {
		case h, ok := <-hints:
			if !ok {
				return nil
			}
			batch = append(batch, h)
		case <-timer.C:
		case <-check.C:
			l.retryJournaled()
			for _, rel := range l.v.budget.AllowedDeferred() {
				l.s.Submit(rel, Job{FiredBy: agentrun.FiredByRescan})
			}
			l.releaseAfterWork()
		case <-l.v.store.Damaged():
			return l.v.stateDamaged()
		}
		// Take whatever else is ready: hints that settled together are
		// reconciled together, and before any gone strand that is due.
	drain:
		for {
			select {
			case h, ok := <-hints:
				if !ok {
					return nil
				}
				batch = append(batch, h)
			default:
				break drain
			}
		}
		if err := l.rootGone(); err != nil {
			return err
		}
		// A changed config file applies before the changes that came
		// with it are run (two stats a turn).
		l.v.reloader.reloadIfChanged()
		if len(batch) > 0 {
			l.reconcile(batch)
		}
		l.due(l.v.now())
		if next, ok := l.next(); ok {
			timer.Reset(next.Sub(l.v.now()))
		}
		l.v.observe.looped(len(l.gone) + len(l.fresh))
	}
}

// reconcile reconciles a batch of hints and schedules what changed; a
// strand found gone, and a new strand the watcher reported, wait for the
// delay first.
func (l *watchLoop) reconcile(batch []watcher.Hint) {
	fired := agentrun.FiredByWatch
	if slices.ContainsFunc(batch, watcher.Hint.Full) {
		fired = agentrun.FiredByRescan
		if l.firstFull {
			fired = agentrun.FiredByCatchUp
		}
		l.firstFull = false
	}
	paths, unlooked, err := l.v.recon.reconcileAll(batch)
	if err != nil {
		// Too many open files, a full disk, an I/O error: the hints are
		// kept and tried again.
		l.retryLater(batch, err)
		return
	}
	for _, h := range batch {
		if _, failed := slices.BinarySearch(unlooked, h.Path); h.Dir || !failed {
			l.retry.Forget(retryKey(h))
		}
	}
	if len(unlooked) > 0 {
		hs := make([]watcher.Hint, len(unlooked))
		for i, rel := range unlooked {
			hs[i] = watcher.Hint{Path: rel}
		}
		l.retryLater(hs, errors.New("a note could not be looked at (see above)"))
	}
	if fired != agentrun.FiredByWatch {
		for i := range batch {
			batch[i].Listing = nil // reconciled: let it go before the memory is
		}
		l.releaseAfterPass()
	}
	now := l.v.now()
	for _, rel := range paths {
		if _, where, err := l.v.recon.lstatStrand(rel); err == nil && where == absent {
			delete(l.fresh, rel)
			if _, waiting := l.gone[rel]; !waiting {
				l.gone[rel] = goneStrand{due: now.Add(l.delay), fired: fired}
			}
			continue
		}
		delete(l.gone, rel)
		if fired == agentrun.FiredByWatch && l.isNew(rel) {
			// Half of a move, maybe, whose other half settles later.
			if _, waiting := l.fresh[rel]; !waiting {
				l.fresh[rel] = goneStrand{due: now.Add(l.delay), fired: fired}
			}
			continue
		}
		delete(l.fresh, rel)
		l.submit(rel, Job{FiredBy: fired})
	}
	l.v.observe.reconciled(batch, paths)
}

// retryKey identifies a hint among the retries: a file's path, a folder's
// path with a slash, the whole vault as "/".
func retryKey(h watcher.Hint) string {
	if h.Dir || h.Full() {
		return h.Path + "/"
	}
	return h.Path
}

// retryLater keeps hints whose reconcile failed with err, to try them
// again after a pause that doubles while they keep failing, from a second
// up to maxRetryPause. A full rescan is retried as a walk of the vault.
func (l *watchLoop) retryLater(hints []watcher.Hint, err error) {
	now := l.v.now()
	var soonest time.Duration
	for _, h := range hints {
		if h.Full() {
			h = watcher.Hint{Dir: true}
		}
		pause := l.retry.Retry(retryKey(h), h, now, time.Second)
		if soonest == 0 || pause < soonest {
			soonest = pause
		}
	}
	l.v.log.Error("cannot reconcile changes; trying again", "in", soonest, "paths", len(hints), "err", err)
}

// isNew reports whether knotd has no record of the strand at rel.
func (l *watchLoop) isNew(rel string) bool {
	_, has, err := l.v.store.Get(rel)
	return err == nil && !has
}

// due reconciles the waiting strands whose delay is over and schedules
// the ones still gone, or new (or changed otherwise). While both gone and
// new strands wait, they are all reconciled together, due or not: a new
// strand that is a gone one moved takes its record and tie-off, and
// neither runs (see detectRename); the others go on waiting.
func (l *watchLoop) due(now time.Time) {
	if retries := l.retry.DueBy(now); len(retries) > 0 {
		// Tried again as a batch of their own (a full rescan among them
		// is a rescan), in the order of their keys.
		l.reconcile(retries)
	}
	var hints []watcher.Hint
	anyDue, pairing := false, len(l.gone) > 0 && len(l.fresh) > 0
	for _, waiting := range []map[string]goneStrand{l.gone, l.fresh} {
		for rel, g := range waiting {
			isDue := !g.due.After(now)
			anyDue = anyDue || isDue
			if isDue || pairing {
				hints = append(hints, watcher.Hint{Path: rel})
			}
		}
	}
	if !anyDue {
		return
	}
	paths, unlooked, err := l.v.recon.reconcileAll(hints)
	if err != nil {
		unlooked = make([]string, len(hints))
		for i, h := range hints {
			unlooked[i] = h.Path
		}
	}
	if len(unlooked) > 0 {
		// Tried again later, as new hints: they wait once more when
		// they are reconciled.
		hs := make([]watcher.Hint, len(unlooked))
		for i, rel := range unlooked {
			hs[i] = watcher.Hint{Path: rel}
			delete(l.gone, rel)
			delete(l.fresh, rel)
		}
		if err == nil {
			err = errors.New("a note could not be looked at (see above)")
		}
		l.retryLater(hs, err)
	}
	changed := make(map[string]bool, len(paths))
	for _, rel := range paths {
		changed[rel] = true
	}
	for _, h := range hints {
		// Moved, back in place, or gone again: nothing to do.
		if !changed[h.Path] {
			delete(l.gone, h.Path)
			delete(l.fresh, h.Path)
		}
	}
	for _, rel := range paths {
		g, waiting := l.gone[rel]
		if !waiting {
			g, waiting = l.fresh[rel]
		}
		if waiting && g.due.After(now) {
			continue // reconciled only to pair it; its delay is not over
		}
		delete(l.gone, rel)
		delete(l.fresh, rel)
		f := g.fired
		if f == "" {
			f = agentrun.FiredByWatch
		}
		l.submit(rel, Job{FiredBy: f})
	}
}

// submit submits a change of the strand rel, unless the strand is as
// knotd's own write left it for the work under way (see ownWrites) and
// nothing else waits for its processing: a conflict copy of its note or
// tie-off that a sync tool made meanwhile (of that very write, say) is
// folded back by the processing it is submitted for.
func (l *watchLoop) submit(rel string, job Job) {
	if info, where, err := l.v.recon.lstatStrand(rel); err == nil && where == present && l.v.own.is(rel, info) && !l.v.recon.copies.Pending(rel) {
		return
	}
	l.s.Submit(rel, job)
}

// next returns when the earliest waiting strand or retry is due.
func (l *watchLoop) next() (time.Time, bool) {
	var next time.Time
	for _, waiting := range []map[string]goneStrand{l.gone, l.fresh} {
		for _, g := range waiting {
			if next.IsZero() || g.due.Before(next) {
				next = g.due
			}
		}
	}
	if r, ok := l.retry.Next(); ok && (next.IsZero() || r.Before(next)) {
		next = r
	}
	return next, !next.IsZero()
}

// releaseMemory gives back what a pass over the whole vault held: the
// state file's pages it mapped and the heap it freed. Without it an idle
// daemon keeps the high-water mark of its last full pass for as long as it
// runs (the Go runtime returns freed heap only gradually).
//
// It is the one caller of debug.FreeOSMemory in knotd, and the watch
// loop calls it at most once a check interval (releaseAfterPass,
// releaseAfterWork). In the bench at 100,000 strands the call is the
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
