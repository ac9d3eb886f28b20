package vault

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/vault/internal/answer"
	"github.com/knotd/knotd/internal/vault/internal/pipeline"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/watcher"
)

// OnceOptions configures a --once pass.
type OnceOptions struct {
	// All runs every strand, not only the changed ones (--all).
	All bool
	// TakeOver makes this device the vault's answering device, whichever
	// device answered it before (--take-over).
	TakeOver bool
	// Progress, if set, is called after each strand is done, and once at
	// the end with done == total.
	Progress func(done, total int, rel string)
	// Notes, when set, makes the pass answer only these notes (vault-
	// relative), changed or not, paused or not: knotd run and knotd retry
	// when no daemon runs. The notes it cannot answer are Refused.
	Notes []string
}

// Summary is what a --once pass did (printed as text or, with --json, as
// this structure).
type Summary struct {
	Vault string `json:"vault"`
	// Adopted counts the strands recorded without a run on first contact
	// because their tie-off holds no answer of theirs; Answered those
	// recorded as answered by the newest section of their tie-off. The
	// strands changed since their last answer are among Runs, and so,
	// with Options.NoAdopt, are those whose tie-off holds no answer.
	Adopted  int `json:"adopted"`
	Answered int `json:"answered"`
	// Ran counts runs; OK and Failed split them. Skipped counts changes
	// recorded without a run (knot_mode: off, knot_events).
	Ran      int           `json:"ran"`
	OK       int           `json:"ok"`
	Failed   int           `json:"failed"`
	Skipped  int           `json:"skipped"`
	Duration time.Duration `json:"duration_ns"`
	Runs     []RunReport   `json:"runs"`
	// Standby, when set, says that another device answers the vault, and
	// which: the pass ran nothing.
	Standby string `json:"standby,omitempty"`
	// StandbyHow says, when Standby is set, what makes this device answer
	// (knotd --take-over, or runner: when the vault config names one).
	StandbyHow string `json:"standby_how,omitempty"`
	// Unanswered, when set, says that the device this one stands by for
	// may be gone (it has this machine's name and is stopped or silent):
	// nobody may answer the vault.
	Unanswered string `json:"unanswered,omitempty"`
	// Refused lists the notes of OnceOptions.Notes the pass could not
	// answer, with why; NotRun those it looked at and ran nothing for
	// (each with Skipped saying why).
	Refused []control.Refusal `json:"refused,omitempty"`
	NotRun  []RunReport       `json:"not_run,omitempty"`
	// Paused lists the changed notes the pass did not run because they
	// are paused, Deferred those waiting for the day's budget: their
	// changes wait, unrecorded (knotd resume, knotd run).
	Paused   []Waiting `json:"paused"`
	Deferred []Waiting `json:"deferred"`
}

// Waiting is a changed note a pass did not run, and why.
type Waiting struct {
	Note string `json:"note"`
	Why  string `json:"why"`
}

// tally collects run reports from the scheduler's goroutines.
type tally struct {
	mu    sync.Mutex
	sum   Summary
	done  int
	named bool // the pass answers the notes the user named
}

func (t *tally) add(rep RunReport) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done++
	if rep.Ran {
		t.sum.Ran++
		if rep.Failed() {
			t.sum.Failed++
		} else {
			t.sum.OK++
		}
		t.sum.Runs = append(t.sum.Runs, rep)
		return
	}
	switch {
	case rep.Skipped == pipeline.PausedSkip:
		t.sum.Paused = append(t.sum.Paused, Waiting{Note: rep.Strand, Why: rep.Skipped})
	case strings.HasPrefix(rep.Skipped, pipeline.BudgetSkip):
		t.sum.Deferred = append(t.sum.Deferred, Waiting{Note: rep.Strand, Why: strings.TrimPrefix(rep.Skipped, pipeline.BudgetSkip)})
	}
	if rep.Skipped != "" && rep.Event.Valid() {
		t.sum.Skipped++
	}
	if t.named && rep.Skipped != "" {
		t.sum.NotRun = append(t.sum.NotRun, rep)
	}
}

// Once does one pass: on first contact it adopts the vault's strands (or,
// with All, runs them all); otherwise it reconciles the whole vault and
// runs every strand that changed since the last pass, then waits for the
// runs to finish. Canceling ctx stops it early; runs cut short stay pending.
func (v *Vault) Once(ctx context.Context, opts OnceOptions) (res Summary, err error) {
	start := v.now()
	t := &tally{sum: Summary{Vault: v.root, Runs: []RunReport{}, Paused: []Waiting{}, Deferred: []Waiting{}}}
	defer v.answering.StopBeat()
	defer func() {
		if derr := v.stateDamaged(); derr != nil {
			err = derr // whatever the pass met first, the damage is what to say
		}
	}()
	// First contact comes first, answering or not: what is in the vault
	// when knotd first sees it is adopted (or rebuilt from its tie-offs),
	// and what changes from then on is a change.
	var adoption Adoption
	if _, seen, err := v.store.Adopted(); err != nil {
		return t.sum, err
	} else if !seen && !opts.All {
		if adoption, err = v.adoption.firstContact(); err != nil {
			return t.sum, err
		}
		t.sum.Adopted, t.sum.Answered = adoption.Adopted, adoption.Answered
	}
	d, derr := v.answering.Decide(opts.TakeOver)
	if !d.Answer {
		v.log.Warn("this device stands by: "+d.Why, "device", v.device.Name)
		t.sum.Standby, t.sum.StandbyHow, t.sum.Unanswered = answer.StandbyReason(d), d.How, d.Unanswered
		return t.sum, derr
	}
	v.answering.WaitHandover(ctx, d.From)
	// The pass goes on deciding at every heartbeat, like the daemon: a
	// pass longer than takeover_after stays heard, and a takeover during
	// the pass stops it (its runs in progress without appending them).
	passCtx, stepDown := context.WithCancel(ctx)
	said := d.Why
	var kw sync.WaitGroup
	kw.Go(func() { v.answering.KeepAnswering(passCtx, stepDown, &said) })
	parent := ctx // ctx becomes passCtx below, which stepDown ends
	defer func() {
		stepDown()
		kw.Wait()
		if v.answering.SteppingDown.Swap(false) && parent.Err() == nil {
			if last := v.answering.LastDecision(); last != nil {
				res.Standby, res.StandbyHow = answer.StandbyReason(*last), last.How
			}
			if errors.Is(err, context.Canceled) {
				err = nil // the pass stopped because another device took over
			}
		}
	}()
	ctx = passCtx
	job := Job{FiredBy: agentrun.FiredByOnce, Force: opts.All}
	var pending []string
	if opts.Notes != nil {
		var res control.Result
		pending, res = v.notesOf(opts.Notes)
		t.sum.Refused, t.named = res.Refused, true
		job = Job{FiredBy: agentrun.FiredByUser, Force: true, ByHand: true}
	} else if pending, _, err = v.adoption.catchUp(opts.All); err != nil {
		return t.sum, err
	}
	total := len(pending)
	s, release := v.scheduler(ctx, func(rep RunReport) {
		t.add(rep)
		if opts.Progress != nil {
			t.mu.Lock()
			done := t.done
			t.mu.Unlock()
			opts.Progress(min(done, total-1), total, rep.Strand)
		}
	})
	for _, rel := range pending {
		s.Submit(rel, job)
	}
	if opts.Notes == nil && !v.dry {
		for _, rel := range v.answeredStrands() {
			s.Submit(rel, Job{FiredBy: agentrun.FiredByAnswer})
		}
	}
	if opts.Notes == nil {
		// What the notes' schedules made due (late, when knotd was not
		// running at the time) runs in the pass too.
		v.startSchedules()
		v.submitDue(s)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { runErr = s.Run(runCtx) })
	idleErr := s.WaitIdle(ctx)
	stop()
	wg.Wait()
	release()
	if opts.Notes == nil && idleErr == nil {
		// The notes the pass recorded for the first time may carry a
		// schedule: it starts from now (and a bad one is said now).
		v.startSchedules()
	}
	if opts.Progress != nil {
		opts.Progress(total, total, "")
	}
	slices.SortFunc(t.sum.Runs, func(a, b RunReport) int { return strings.Compare(a.Strand, b.Strand) })
	for _, ws := range [][]Waiting{t.sum.Paused, t.sum.Deferred} {
		slices.SortFunc(ws, func(a, b Waiting) int { return strings.Compare(a.Note, b.Note) })
	}
	t.sum.Duration = v.now().Sub(start)
	if idleErr != nil {
		return t.sum, idleErr
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return t.sum, runErr
	}
	return t.sum, nil
}

// catchUp is the start of every pass: on first contact (unless all) it
// adopts the vault (see adopt), then reconciles the whole vault, which
// finds the strands changed since their last answer; with all
// every strand on disk and every recorded one is pending.
func (ad *adopter) catchUp(all bool) (pending []string, a Adoption, err error) {
	v := ad.v
	_, seen, err := v.store.Adopted()
	if err != nil {
		return nil, a, err
	}
	if !seen && !all {
		if a, err = ad.firstContact(); err != nil {
			return nil, a, err
		}
		if a.Changed == 0 && a.Unanswered == 0 {
			return nil, a, nil
		}
	}
	if !seen && all {
		if err := v.store.Update(func(tx *state.Tx) error { return tx.SetAdopted(v.now().UTC()) }); err != nil {
			return nil, a, err
		}
	}
	if all {
		set := map[string]struct{}{}
		if err := v.recon.Walk("", false, func(rel string, _ fs.FileInfo) { set[rel] = struct{}{} }); err != nil {
			return nil, a, err
		}
		err := v.store.ForEach(func(r state.Record) error { set[r.Path] = struct{}{}; return nil })
		return sortedKeys(set), a, err
	}
	pending, err = v.recon.Reconcile([]watcher.Hint{{Dir: true}})
	return pending, a, err
}

// firstContact adopts the vault and says what it found.
func (ad *adopter) firstContact() (Adoption, error) {
	v := ad.v
	a, err := ad.adopt()
	if err != nil {
		return a, err
	}
	if v.noAdopt {
		v.log.Info("first contact with this vault on this device: notes whose tie-off answers them are recorded as answered, those changed since their last answer run once, and with --no-adopt those with no answer run once too",
			"strands", a.Answered+a.Changed+a.Unanswered, "answered", a.Answered, "changed", a.Changed, "unanswered", a.Unanswered)
		return a, nil
	}
	v.log.Info("first contact with this vault on this device: notes whose tie-off answers them are recorded as answered, those changed since their last answer run once, the others are adopted as processed without a run (use --all to run them all)",
		"strands", a.Adopted+a.Answered+a.Changed, "adopted", a.Adopted, "answered", a.Answered, "changed", a.Changed)
	return a, nil
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
