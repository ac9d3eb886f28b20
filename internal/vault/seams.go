package vault

import (
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/watcher"
)

// The daemon's test seams: two small interfaces it calls at the points
// tests watch (observer) and at the steps where the operating system can
// fail it (faults). The daemon's own, quiet, does nothing and fails
// nothing; tests replace them before Once or Watch starts, and they are
// only read afterwards.

// observer is told what the daemon did.
type observer interface {
	// scheduled is given the scheduler of a pass before it runs.
	scheduled(s *scheduler.Scheduler[Job])
	// reconciled is told the hints Watch reconciled in one batch and the
	// paths it submitted for them.
	reconciled(hints []watcher.Hint, submitted []string)
	// worked is told what each processed strand did.
	worked(rel string, rep RunReport)
	// looped is told, at the end of each turn of Watch's loop, how many
	// gone strands still wait for their delay.
	looped(waiting int)
	// released is told that Watch's loop gave memory back.
	released()
	// journaled is told that a run's journal entry is durable.
	journaled(runID string)
	// completed is told that a run's record is committed.
	completed(runID string)
}

// faults may fail the steps of the daemon that the operating system can
// fail: an error returned is that step's error.
type faults interface {
	// opening: before a strand is opened to be read (too many open
	// files, say).
	opening(rel string) error
	// syncing: before the directory (vault-relative) of a strand knotd
	// wrote is synced.
	syncing(dir string) error
	// journaling: before a run is journaled (a full disk, say).
	journaling(runID string) error
	// appending: before a journaled run's section is written to its
	// tie-off (a full disk, say).
	appending(runID string) error
	// completing: before a run's record is committed (its section is in
	// the tie-off).
	completing(runID string) error
}

// quiet is the daemon's own observer and faults.
type quiet struct{}

func (quiet) scheduled(*scheduler.Scheduler[Job]) {}
func (quiet) reconciled([]watcher.Hint, []string) {}
func (quiet) worked(string, RunReport)            {}
func (quiet) looped(int)                          {}
func (quiet) released()                           {}
func (quiet) journaled(string)                    {}
func (quiet) completed(string)                    {}
func (quiet) opening(string) error                { return nil }
func (quiet) syncing(string) error                { return nil }
func (quiet) journaling(string) error             { return nil }
func (quiet) appending(string) error              { return nil }
func (quiet) completing(string) error             { return nil }
