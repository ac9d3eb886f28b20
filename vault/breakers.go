package vault

import (
	"fmt"
	"sync"
	"time"

	"github.com/knotd/knotd/config"
	"github.com/knotd/knotd/state"
	"github.com/knotd/knotd/strand"
	"github.com/knotd/knotd/tieoff"
)

// breakers count each strand's recent runs and its failed runs in a row,
// to pause a strand that loops or keeps failing (config.Breakers). The
// counts are kept in memory: a restart starts them afresh.
type breakers struct {
	mu     sync.Mutex
	runs   map[string][]time.Time // the times of the strand's runs within the window
	failed map[string]int         // failed runs in a row
}

// ran counts a run of the strand rel that ended at now, and returns why
// the strand must be paused now, "" when it need not.
func (b *breakers) ran(rel string, now time.Time, failed bool, c config.Breakers) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runs == nil {
		b.runs, b.failed = map[string][]time.Time{}, map[string]int{}
	}
	if failed {
		b.failed[rel]++
	} else {
		delete(b.failed, rel)
	}
	if c.Runs > 0 {
		times := b.runs[rel]
		kept := times[:0]
		for _, t := range times {
			if now.Sub(t) < c.Within {
				kept = append(kept, t)
			}
		}
		b.runs[rel] = append(kept, now)
		if n := len(b.runs[rel]); n > c.Runs {
			return fmt.Sprintf("it ran %d times within %v, which looks like a loop (an agent that edits the note it answers, or two tools taking turns at it)", n, c.Within)
		}
	}
	if n := b.failed[rel]; c.Failures > 0 && n >= c.Failures {
		return fmt.Sprintf("its last %d runs failed", n)
	}
	return ""
}

// reset forgets the strand's counts (it was resumed, or it is gone).
func (b *breakers) reset(rel string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.runs, rel)
	delete(b.failed, rel)
}

// trip pauses the strand rel for why, and appends one failure section to
// its tie-off that says so and how to resume it. A strand paused already
// is left as it is.
func (v *Vault) trip(rel string, rep RunReport, why string) {
	now := v.now().UTC()
	paused := false
	err := v.store.Update(func(tx *state.Tx) (err error) {
		paused, err = tx.Pause(rel, now, "paused by knotd: "+why)
		return err
	})
	if err != nil {
		v.log.Error("a breaker tripped, and knotd cannot pause the strand", "strand", rel, "why", why, "err", err)
		return
	}
	v.breakers.reset(rel)
	if !paused {
		return
	}
	v.log.Warn("strand paused: "+why+"; its changes wait until knotd resume", "strand", rel)
	// A notice, not a run: "## Status: paused", and no run marker (there
	// is no run, and no transcript, for it to name). What the last run
	// answered stays in that run's section, which newestAnswer reads past
	// the notice. It is appended once, when the pause begins; it is not
	// journaled, so crash recovery never appends it again.
	sec := tieoff.Section{Event: rep.Event, Strand: rel, Time: now, Paused: true,
		Body: fmt.Sprintf("knotd paused this note: %s. Its changes wait, and none is lost: `knotd resume %s` resumes it and answers what changed meanwhile (`knotd status` lists the paused notes). The limits are `breakers:` in your configuration.", why, rel)}
	t, err := strand.TieOffPath(rel)
	if err == nil {
		_, err = tieoff.Append(v.fs, t, sec)
	}
	if err != nil {
		v.log.Error("cannot say in the tie-off that the strand is paused (knotd status says it)", "strand", rel, "err", err)
	}
}
