// Package loop is the daemon's watch loop: it turns the watcher's hints
// into work for the scheduler, and owns the loop's timed work, all of it
// in timing.Dues on one timer: a strand found gone, or new, waits one
// quiet period before it is processed (so that the two halves of a move
// are paired, not taken for a delete and a create), hints whose reconcile
// failed are tried again after a pause that grows, and at each check
// interval the strands whose runs are still journaled (a full disk) are
// tried again likewise, the strands the budget allows again are
// submitted, and memory is given back. It checks that the vault directory
// is still there. What it needs of the vault is Host.
package loop

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/vault/internal/timing"
	"github.com/knotd/knotd/internal/watcher"
)

// Host is what the watch loop asks of the vault it watches. The loop
// calls it from its own goroutine only.
type Host interface {
	Now() time.Time    // the clock the loop's waits are measured by
	Log() *slog.Logger // where the loop says what failed
	// Reconcile compares the disk with the records for hints: changed
	// are the strands to look at, unlooked the hinted notes that could
	// not be looked at (already said); an error means nothing was.
	Reconcile(hints []watcher.Hint) (changed, unlooked []string, err error)
	// Gone reports whether the strand at rel is not on disk; New whether
	// knotd has no record of it.
	Gone(rel string) bool
	New(rel string) bool
	// Own reports whether the strand at rel is as knotd's own write left
	// it for the work under way, and nothing else waits for its
	// processing: its change is not submitted.
	Own(rel string) bool
	// Submit submits a change of the strand rel to the scheduler.
	Submit(rel string, fired agentrun.FiredBy)
	// Journaled returns the strands with runs still journaled (a path
	// may come more than once).
	Journaled() ([]string, error)
	// AllowedDeferred returns, and forgets, the strands deferred for the
	// day's budget that it allows now.
	AllowedDeferred() []string
	// ReleaseMemory gives back what work and passes over the vault held.
	ReleaseMemory()
	// ReloadIfChanged reloads the configuration if its files changed.
	ReloadIfChanged()
	// Damaged is closed when the state store is found damaged;
	// StateDamaged then returns the error the loop returns.
	Damaged() <-chan struct{}
	StateDamaged() error
	// Reconciled is told the hints reconciled in one batch and the paths
	// looked at for them; Looped, at the end of each turn, how many gone
	// and new strands wait for their delay (test seams).
	Reconciled(hints []watcher.Hint, paths []string)
	Looped(waiting int)
}

// Options are what the loop knows of the vault when it is made.
type Options struct {
	// Root is the vault directory's path, RootInfo the directory when
	// watching began (nil: not checked).
	Root     string
	RootInfo fs.FileInfo
	// Delay is how long a gone or new strand waits (0: watcher.DefaultQuiet).
	Delay time.Duration
	// Every is the interval of the loop's checks (0: DefaultEvery).
	Every time.Duration
	// Processed counts the work the scheduler finished (nil: none).
	Processed *atomic.Int64
}

// Loop turns the watcher's hints into scheduled work. It is owned by the
// goroutine that calls Run.
type Loop struct {
	h     Host
	root  string
	delay time.Duration // how long a gone or new strand waits
	// gone and fresh are the gone and new strands waiting for their
	// delay, with what fired the change that found them.
	gone  timing.Dues[agentrun.FiredBy]
	fresh timing.Dues[agentrun.FiredBy]
	retry timing.Dues[watcher.Hint] // hints whose reconcile failed, tried again after a pause
	// journaled are the strands with runs still journaled (their reply
	// could not be appended or committed: a full disk): when each is
	// tried again, with a pause that doubles while it stays journaled.
	journaled timing.Dues[struct{}]
	firstFull bool
	rootInfo  fs.FileInfo // the vault directory when watching began; nil: not checked
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

// New returns the loop that feeds host's scheduler, with options o.
func New(host Host, o Options) *Loop {
	l := &Loop{h: host, root: o.Root, rootInfo: o.RootInfo, delay: o.Delay, every: o.Every, processed: o.Processed, firstFull: true}
	if l.delay <= 0 {
		l.delay = watcher.DefaultQuiet
	}
	if l.every <= 0 {
		l.every = DefaultEvery
	}
	if l.processed == nil {
		l.processed = new(atomic.Int64)
	}
	return l
}

// DefaultEvery is how often the loop checks, when nothing happens, that
// the vault directory is still there (an unmount sends no event, and a
// deletion may send none for the directory itself while knotd holds
// files open in it) and retries the runs still journaled because a write
// failed (a full disk that has room again).
const DefaultEvery = 10 * time.Second

// ErrVaultGone is wrapped by Run's error when the vault directory was
// deleted, moved, replaced or unmounted while knotd watched it.
var ErrVaultGone = errors.New("vault directory is gone")

// Check does what the loop does at each check interval: it retries the
// strands whose runs are still journaled, submits those the budget allows
// again, and gives memory back if work was done since the last check.
func (l *Loop) Check() {
	l.retryJournaled()
	for _, rel := range l.h.AllowedDeferred() {
		l.h.Submit(rel, agentrun.FiredByRescan)
	}
	l.releaseAfterWork()
}

// retryJournaled schedules the strands whose runs are still journaled:
// their processing appends each reply once and runs nothing unless the
// strand changed again. A strand is tried at the first check that finds
// it journaled, then after pauses that double while it stays journaled
// (two checks, four, …), up to timing.MaxPause: a disk that stays full is
// not written to, nor logged about, every check forever.
func (l *Loop) retryJournaled() {
	paths, err := l.h.Journaled()
	if err != nil {
		l.h.Log().Error("cannot read the journal of unfinished runs; retrying later", "err", err)
		return
	}
	now := l.h.Now()
	still := make(map[string]bool, len(paths))
	for _, rel := range paths {
		if still[rel] {
			continue
		}
		still[rel] = true
		if !l.journaled.IsDue(rel, now) {
			continue
		}
		l.journaled.Retry(rel, struct{}{}, now, l.every)
		l.h.Submit(rel, agentrun.FiredByRescan)
	}
	l.journaled.Keep(func(rel string) bool { return still[rel] }) // the others finished
}

// releaseAfterWork gives memory back at each check after work was done:
// runs map the state file's pages of every strand they touch (a burst over
// a large vault, a sync tool bringing in thousands of notes, maps page
// after page of it) and grow the heap. Releasing while work goes on bounds
// what is resident to what the work of one check interval touched, and an
// idle daemon keeps none of it.
func (l *Loop) releaseAfterWork() {
	if n := l.processed.Load(); n != l.released || l.releaseDue {
		l.released = n
		l.release()
	}
}

// releaseAfterPass gives memory back after a pass over the whole vault: at
// once, unless memory was given back less than a check interval ago; then
// at the next check. Passes can come every 100 ms (--poll 100ms), and each
// release forces a garbage collection: this keeps it to one a check.
func (l *Loop) releaseAfterPass() {
	if !l.lastRelease.IsZero() && l.h.Now().Sub(l.lastRelease) < l.every {
		l.releaseDue = true
		return
	}
	l.release()
}

func (l *Loop) release() {
	l.lastRelease, l.releaseDue = l.h.Now(), false
	l.h.ReleaseMemory()
}

// rootGone reports an error wrapping ErrVaultGone if the vault directory
// is no longer the one watching began with.
func (l *Loop) rootGone() error {
	if l.rootInfo == nil {
		return nil
	}
	fi, err := os.Stat(l.root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %w", ErrVaultGone, err)
	case err != nil:
		return nil // a transient error: the next turn looks again
	case !os.SameFile(fi, l.rootInfo):
		return fmt.Errorf("%w: another directory is at its path", ErrVaultGone)
	}
	return nil
}

// Run handles hints until the channel is closed (it returns nil), the
// state store is found damaged (it returns Host.StateDamaged's error) or
// the vault directory is gone (it returns an error wrapping ErrVaultGone,
// before it reconciles anything: the strands are not deleted, the vault
// is).
func (l *Loop) Run(hints <-chan watcher.Hint) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
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
			l.Check()
		case <-l.h.Damaged():
			return l.h.StateDamaged()
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
		l.h.ReloadIfChanged()
		if len(batch) > 0 {
			l.reconcile(batch)
		}
		l.due(l.h.Now())
		if next, ok := l.next(); ok {
			timer.Reset(next.Sub(l.h.Now()))
		}
		l.h.Looped(l.gone.Len() + l.fresh.Len())
	}
}

// reconcile reconciles a batch of hints and schedules what changed; a
// strand found gone, and a new strand the watcher reported, wait for the
// delay first.
func (l *Loop) reconcile(batch []watcher.Hint) {
	fired := agentrun.FiredByWatch
	if slices.ContainsFunc(batch, watcher.Hint.Full) {
		fired = agentrun.FiredByRescan
		if l.firstFull {
			fired = agentrun.FiredByCatchUp
		}
		l.firstFull = false
	}
	paths, unlooked, err := l.h.Reconcile(batch)
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
	now := l.h.Now()
	for _, rel := range paths {
		if l.h.Gone(rel) {
			l.fresh.Forget(rel)
			l.gone.Wait(rel, fired, now.Add(l.delay))
			continue
		}
		l.gone.Forget(rel)
		if fired == agentrun.FiredByWatch && l.h.New(rel) {
			// Half of a move, maybe, whose other half settles later.
			l.fresh.Wait(rel, fired, now.Add(l.delay))
			continue
		}
		l.fresh.Forget(rel)
		l.submit(rel, fired)
	}
	l.h.Reconciled(batch, paths)
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
// up to timing.MaxPause. A full rescan is retried as a walk of the vault.
func (l *Loop) retryLater(hints []watcher.Hint, err error) {
	now := l.h.Now()
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
	l.h.Log().Error("cannot reconcile changes; trying again", "in", soonest, "paths", len(hints), "err", err)
}

// due reconciles the waiting strands whose delay is over and schedules
// the ones still gone, or new (or changed otherwise). While both gone and
// new strands wait, they are all reconciled together, due or not: a new
// strand that is a gone one moved takes its record and tie-off, and
// neither runs; the others go on waiting.
func (l *Loop) due(now time.Time) {
	if retries := l.retry.DueBy(now); len(retries) > 0 {
		// Tried again as a batch of their own (a full rescan among them
		// is a rescan), in the order of their keys.
		l.reconcile(retries)
	}
	var hints []watcher.Hint
	anyDue, pairing := false, l.gone.Len() > 0 && l.fresh.Len() > 0
	for _, waiting := range []*timing.Dues[agentrun.FiredBy]{&l.gone, &l.fresh} {
		for rel, at := range waiting.All() {
			isDue := !at.After(now)
			anyDue = anyDue || isDue
			if isDue || pairing {
				hints = append(hints, watcher.Hint{Path: rel})
			}
		}
	}
	if !anyDue {
		return
	}
	paths, unlooked, err := l.h.Reconcile(hints)
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
			l.gone.Forget(rel)
			l.fresh.Forget(rel)
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
			l.gone.Forget(h.Path)
			l.fresh.Forget(h.Path)
		}
	}
	for _, rel := range paths {
		f, at, waiting := l.gone.Get(rel)
		if !waiting {
			f, at, waiting = l.fresh.Get(rel)
		}
		if waiting && at.After(now) {
			continue // reconciled only to pair it; its delay is not over
		}
		l.gone.Forget(rel)
		l.fresh.Forget(rel)
		if f == "" {
			f = agentrun.FiredByWatch
		}
		l.submit(rel, f)
	}
}

// submit submits a change of the strand rel, unless the strand is as
// knotd's own write left it for the work under way and nothing else waits
// for its processing (Host.Own).
func (l *Loop) submit(rel string, fired agentrun.FiredBy) {
	if l.h.Own(rel) {
		return
	}
	l.h.Submit(rel, fired)
}

// next returns when the earliest waiting strand or retry is due.
func (l *Loop) next() (time.Time, bool) {
	gone, _ := l.gone.Next()
	fresh, _ := l.fresh.Next()
	retry, _ := l.retry.Next()
	return timing.Earliest(gone, fresh, retry)
}
