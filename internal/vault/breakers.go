package vault

import (
	"fmt"
	"time"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/notify"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
)

// countRun counts, in b, a run of a strand that ended at now, and returns
// the counts to keep and why the strand must be paused now ("" when it
// need not). It keeps only what the window needs: the runs within it, and
// no more of them than trip the breaker.
func countRun(b state.Breaker, now time.Time, failed bool, c config.Breakers) (state.Breaker, string) {
	if failed {
		b.Failed++
	} else {
		b.Failed = 0
	}
	var kept []time.Time
	if c.Runs > 0 {
		for _, t := range b.Runs {
			if now.Sub(t) < c.Within {
				kept = append(kept, t)
			}
		}
		kept = append(kept, now)
		if len(kept) > c.Runs+1 {
			kept = kept[len(kept)-(c.Runs+1):]
		}
	}
	b.Runs = kept
	if n := len(b.Runs); c.Runs > 0 && n > c.Runs {
		return b, fmt.Sprintf("it ran %d times within %v, which looks like a loop (an agent that edits the note it answers, or two tools taking turns at it)", n, c.Within)
	}
	if c.Failures > 0 && b.Failed >= c.Failures {
		return b, fmt.Sprintf("its last %d runs failed", b.Failed)
	}
	return b, ""
}

// breakerRan counts a run of the strand rel that ended at now, in the
// state store (so that a restart keeps the counts: a note that loops
// across restarts still trips), and returns why the strand must be paused
// now, "" when it need not.
func breakerRan(s *state.Store, rel string, now time.Time, failed bool, c config.Breakers) (why string, err error) {
	err = s.Update(func(tx *state.Tx) error {
		b, err := tx.Breaker(rel)
		if err != nil {
			return err
		}
		b, why = countRun(b, now, failed, c)
		return tx.PutBreaker(rel, b)
	})
	if err != nil {
		return "", fmt.Errorf("vault: count the run of %s for the breakers: %w", rel, err)
	}
	return why, nil
}

// trip pauses the strand rel for why, and appends one failure section to
// its tie-off that says so and how to resume it. A strand paused already
// is left as it is.
func (v *Vault) trip(rel string, rep RunReport, why string) {
	now := v.now().UTC()
	paused := false
	err := v.store.Update(func(tx *state.Tx) (err error) {
		if paused, err = tx.Pause(rel, now, "paused by knotd: "+why); err != nil {
			return err
		}
		return tx.ForgetBreaker(rel)
	})
	if err != nil {
		v.log.Error("a breaker tripped, and knotd cannot pause the note", "strand", rel, "why", why, "err", err)
		return
	}
	if !paused {
		return
	}
	v.log.Warn("note paused: "+why+"; its changes wait until knotd resume", "strand", rel)
	v.tell(notify.Paused(v.root, rel, "breaker/"+rel+"/"+now.Format(time.RFC3339Nano), "knotd paused it: "+why,
		"Its changes wait, none lost: knotd resume "+rel+" resumes it", now))
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
		v.log.Error("cannot say in the tie-off that the note is paused (knotd status says it)", "strand", rel, "err", err)
	}
}
