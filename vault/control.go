package vault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/control"
	"github.com/knotd/knotd/scheduler"
	"github.com/knotd/knotd/state"
	"github.com/knotd/knotd/strand"
	"github.com/knotd/knotd/transcript"
)

// What knotd status, run, retry, pause and resume ask of a vault: the
// daemon serves them (control.Backend) through its control socket, and
// the commands do them on their own (RunNotes, the store's pauses) when
// no daemon runs.

var _ control.Backend = (*Vault)(nil)

// ControlSocket returns the path of the control socket of the vault at
// root in the state directory home ("" for the user's): where its daemon
// listens. ok is false when knotd never ran on the vault on this machine.
func ControlSocket(home, root string) (path string, ok bool, err error) {
	f, ok, err := folderOf(home, root)
	if !ok {
		return "", false, err
	}
	return control.SocketPath(f.Dir), true, nil
}

// ControlSocket returns the path of v's control socket.
func (v *Vault) ControlSocket() string { return control.SocketPath(v.folder.Dir) }

// maxFailuresShown bounds the failures a status lists.
const maxFailuresShown = 50

// active is the runs in progress, for status.
type active struct {
	mu   sync.Mutex
	runs map[string]control.Running
}

func (a *active) start(r control.Running) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.runs == nil {
		a.runs = make(map[string]control.Running)
	}
	a.runs[r.Note] = r
}

func (a *active) done(rel string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.runs, rel)
}

func (a *active) list(now time.Time) []control.Running {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]control.Running, 0, len(a.runs))
	for _, r := range a.runs {
		r.Elapsed = now.Sub(r.Started)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b control.Running) int { return a.Started.Compare(b.Started) })
	return out
}

// Running returns how many runs are in progress.
func (v *Vault) Running() int {
	v.active.mu.Lock()
	defer v.active.mu.Unlock()
	return len(v.active.runs)
}

// Status says what the daemon does: whether this device answers, the
// runs in progress and waiting, the notes whose last run failed, the
// paused notes and the day's runs.
func (v *Vault) Status(context.Context) (control.Status, error) {
	now := v.now().UTC()
	st := control.Status{
		Vault: v.root, PID: os.Getpid(), Since: v.since, Now: now,
		Device: v.device.Name, DeviceID: v.device.ID, Agent: v.config().DefaultAgent,
		Running: v.active.list(now), Queued: []control.Queued{}, Failures: []control.Failure{}, Paused: []control.Paused{}, Deferred: []control.Paused{},
	}
	for rel, why := range v.deferredNotes() {
		st.Deferred = append(st.Deferred, control.Paused{Note: rel, Why: why})
	}
	slices.SortFunc(st.Deferred, func(a, b control.Paused) int { return strings.Compare(a.Note, b.Note) })
	switch d := v.lastDecision(); {
	case d == nil:
		st.Standby = "starting: it has not yet decided whether this device answers the vault"
	case d.Answer:
		st.Answering = true
	default:
		st.Standby = standbyReason(*d)
	}
	if s := v.live.Load(); s != nil {
		for _, e := range s.Snapshot() {
			if !e.Running || e.FollowUp {
				st.Queued = append(st.Queued, control.Queued{Note: e.Key, FiredBy: string(e.Job.FiredBy), FollowUp: e.Running})
			}
		}
	}
	return st, storedStatus(&st, v.store, v.folder.Runs())
}

// StoredStatus is the status of the vault at root (whose folder is in the
// state directory home, "" for the user's) when no daemon runs: what its
// state store and transcripts say (failures, paused notes, the day's
// runs). It changes nothing; ok is false when knotd never ran on the
// vault on this machine.
func StoredStatus(home, root string) (st control.Status, ok bool, err error) {
	f, ok, err := folderOf(home, root)
	if !ok {
		return st, false, err
	}
	st = control.Status{Vault: root, Now: time.Now().UTC(), Running: []control.Running{}, Queued: []control.Queued{}, Failures: []control.Failure{}, Paused: []control.Paused{}, Deferred: []control.Paused{}}
	s, err := state.Open(f.StateFile())
	if err != nil {
		return st, true, err
	}
	err = storedStatus(&st, s, f.Runs())
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return st, true, err
}

// storedStatus fills in st what the store s and the transcripts in runs
// say: the notes whose last run failed (newest first, their reasons from
// the transcripts), the paused notes, and the runs of st.Now's day.
func storedStatus(st *control.Status, s *state.Store, runs string) error {
	err := s.ForEach(func(rec state.Record) error {
		if rec.LastOutcome == state.OutcomeFailed {
			st.Failures = append(st.Failures, control.Failure{Note: rec.Path, RunID: rec.LastRunID, Time: rec.Processed.UTC()})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(st.Failures, func(a, b control.Failure) int { return b.Time.Compare(a.Time) })
	st.Failures = st.Failures[:min(len(st.Failures), maxFailuresShown)]
	for i, f := range st.Failures {
		if sum, ok := transcript.Summarize(runs, f.RunID); ok {
			st.Failures[i].Reason = sum.Reason
		}
	}
	ps, err := s.Paused()
	if err != nil {
		return err
	}
	for _, p := range ps {
		st.Paused = append(st.Paused, control.Paused{Note: p.Path, Since: p.Since, Why: p.Why})
	}
	today, err := transcript.ListSince(runs, st.Now.Truncate(24*time.Hour))
	if err != nil {
		return err
	}
	var l transcript.Ledger
	for _, r := range today {
		st.Today.Runs++
		switch {
		case r.Outcome == string(agentrun.OutcomeOK):
			st.Today.OK++
		case r.Finished:
			st.Today.Failed++
		}
		l.Add(r)
	}
	st.Today.InputTokens, st.Today.OutputTokens = l.Usage.InputTokens, l.Usage.OutputTokens
	st.Today.CostUSD, st.Today.Priced = l.Usage.CostUSD, l.Priced
	return nil
}

// Run answers the notes now, changed or not, paused or not: through the
// daemon's scheduler, each after the run it may have in progress.
func (v *Vault) Run(_ context.Context, notes []string) (control.Result, error) {
	s, err := v.liveScheduler()
	if err != nil {
		return control.Result{}, err
	}
	rels, res := v.notesOf(notes)
	for _, rel := range rels {
		s.Submit(rel, Job{FiredBy: agentrun.FiredByUser, Force: true, ByHand: true})
	}
	res.Done = rels
	return res, nil
}

// Retry runs again, through the daemon, every note whose last run failed
// at or after since.
func (v *Vault) Retry(ctx context.Context, since time.Time) (control.Result, error) {
	rels, err := v.Failed(since)
	if err != nil {
		return control.Result{}, err
	}
	return v.Run(ctx, rels)
}

// Failed returns the notes whose last run failed at or after since, in
// path order.
func (v *Vault) Failed(since time.Time) ([]string, error) {
	var rels []string
	err := v.store.ForEach(func(rec state.Record) error {
		if rec.LastOutcome == state.OutcomeFailed && !rec.Processed.Before(since) {
			rels = append(rels, rec.Path)
		}
		return nil
	})
	return rels, err
}

// Pause pauses the notes: their changes wait, unrecorded, until they are
// resumed or run by hand. A run in progress finishes.
func (v *Vault) Pause(_ context.Context, notes []string, why string) (control.Result, error) {
	if strings.TrimSpace(why) == "" {
		why = "paused by knotd pause"
	}
	rels, res := v.notesOf(notes)
	now := v.now().UTC()
	err := v.store.Update(func(tx *state.Tx) error {
		for _, rel := range rels {
			isNew, err := tx.Pause(rel, now, why)
			if err != nil {
				return err
			}
			if isNew {
				res.Done = append(res.Done, rel)
			} else {
				res.Refused = append(res.Refused, control.Refusal{Note: rel, Why: "already paused"})
			}
		}
		return nil
	})
	if err != nil {
		return control.Result{}, err
	}
	for _, rel := range res.Done {
		v.log.Info("strand paused: its changes wait until it is resumed", "strand", rel, "why", why)
	}
	return res, nil
}

// Resume resumes the notes (every paused one when notes is empty). A
// note changed while it was paused is answered now when the daemon runs,
// or at the next start or pass.
func (v *Vault) Resume(_ context.Context, notes []string) (control.Result, error) {
	var rels []string
	var res control.Result
	if len(notes) == 0 {
		ps, err := v.store.Paused()
		if err != nil {
			return control.Result{}, err
		}
		for _, p := range ps {
			rels = append(rels, p.Path)
		}
	} else {
		rels, res = v.notesOf(notes)
	}
	err := v.store.Update(func(tx *state.Tx) error {
		for _, rel := range rels {
			was, err := tx.Resume(rel)
			if err != nil {
				return err
			}
			if was {
				// A resumed note starts its breakers' counts afresh.
				if err := tx.ForgetBreaker(rel); err != nil {
					return err
				}
				res.Done = append(res.Done, rel)
			} else {
				res.Refused = append(res.Refused, control.Refusal{Note: rel, Why: "not paused"})
			}
		}
		return nil
	})
	if err != nil {
		return control.Result{}, err
	}
	s := v.live.Load()
	for _, rel := range res.Done {
		v.log.Info("strand resumed", "strand", rel)
		if s != nil {
			// A change made while it was paused runs now; an unchanged
			// strand has nothing to do.
			s.Submit(rel, Job{FiredBy: agentrun.FiredByUser})
		}
	}
	return res, nil
}

// liveScheduler returns the scheduler of the daemon while this device
// answers the vault.
func (v *Vault) liveScheduler() (*scheduler.Scheduler[Job], error) {
	if s := v.live.Load(); s != nil {
		return s, nil
	}
	if d := v.lastDecision(); d != nil && !d.Answer {
		return nil, fmt.Errorf("this device stands by: %s", standbyReason(*d))
	}
	return nil, errors.New("knotd is not answering the vault yet (it is starting); try again in a moment")
}

// notesOf turns the vault-relative paths the user named into strands,
// refusing what is not a note knotd answers: outside the vault, not a
// Markdown note, a tie-off, or ignored.
func (v *Vault) notesOf(notes []string) ([]string, control.Result) {
	var res control.Result
	var rels []string
	for _, n := range notes {
		rel := strings.TrimPrefix(n, "./")
		switch {
		case strand.ValidateRel(rel) != nil:
			res.Refused = append(res.Refused, control.Refusal{Note: n, Why: "not a path inside the vault"})
		case !strand.IsStrandPath(rel):
			res.Refused = append(res.Refused, control.Refusal{Note: n, Why: "not a note knotd answers (a Markdown file that is not a tie-off)"})
		case slices.Contains(rels, rel):
		default:
			if _, where, err := v.lstatStrand(rel); err != nil {
				res.Refused = append(res.Refused, control.Refusal{Note: n, Why: err.Error()})
			} else if where == ignored {
				res.Refused = append(res.Refused, control.Refusal{Note: n, Why: "ignored (knotd --explain-ignore says why)"})
			} else {
				rels = append(rels, rel)
			}
		}
	}
	return rels, res
}
