package vault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/knotd/knotd/internal/vault/internal/answer"
	"github.com/knotd/knotd/internal/vault/internal/reconcile"
	"github.com/knotd/knotd/internal/vaultfs"
)

// What knotd status, run, retry, pause and resume ask of a vault: the
// daemon serves them (control.Backend) through its control socket, and
// the commands do them on their own (RunNotes, the store's pauses) when
// no daemon runs.

var (
	_ control.Backend     = (*Control)(nil)
	_ control.StateCopier = (*Control)(nil)
	_ control.Reloader    = (*Control)(nil)
)

// Control is what the control socket calls on the vault v (knotd status,
// run, retry, pause, resume, trust, and a dry run's copy of the state):
// the daemon serves it, and the commands call it on a vault they open
// themselves when no daemon runs.
type Control struct{ v *Vault }

// Control returns v's control adapter.
func (v *Vault) Control() *Control { return &Control{v} }

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
func (c *Control) Running() int {
	v := c.v
	v.active.mu.Lock()
	defer v.active.mu.Unlock()
	return len(v.active.runs)
}

// Status says what the daemon does: whether this device answers, the
// runs in progress and waiting, the notes whose last run failed, the
// paused notes and the day's runs.
func (c *Control) Status(context.Context) (control.Status, error) {
	v := c.v
	now := v.now().UTC()
	st := control.Status{
		Vault: v.root, PID: os.Getpid(), Since: v.since, Now: now,
		Device: v.device.Name, DeviceID: v.device.ID, Agent: v.config().DefaultAgent,
		Running: v.active.list(now), Queued: []control.Queued{}, Failures: []control.Failure{}, Paused: []control.Paused{}, Deferred: []control.Paused{},
	}
	for rel, d := range v.budget.Deferred() {
		st.Deferred = append(st.Deferred, control.Paused{Note: rel, Since: d.Since, Why: d.Why})
	}
	slices.SortFunc(st.Deferred, func(a, b control.Paused) int { return strings.Compare(a.Note, b.Note) })
	switch d := v.answering.LastDecision(); {
	case d == nil:
		st.Standby = "starting: it has not yet decided whether this device answers the vault"
	case d.Answer:
		st.Answering = true
	default:
		st.Standby = answer.StandbyReason(*d)
	}
	if s := v.live.Load(); s != nil {
		for _, e := range s.Snapshot() {
			if !e.Running || e.FollowUp {
				st.Queued = append(st.Queued, control.Queued{Note: e.Key, FiredBy: string(e.Job.FiredBy), FollowUp: e.Running})
			}
		}
	}
	if err := storedStatus(&st, v.store, v.folder.Runs()); err != nil {
		return st, err
	}
	for i, f := range st.Failures {
		st.Failures[i].NoRetry = c.whyNoRetry(f.Note)
	}
	return st, nil
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
	// The store is open, read only, just for what it says, and closed
	// before the transcripts are read: a status never holds a knotd that
	// starts (a --once, a service) out of the store (it waits up to a
	// second for bbolt's lock) for longer than that.
	s, err := state.OpenReadOnly(f.StateFile())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No store yet: nothing failed, nothing is paused.
	case errors.Is(err, state.ErrNotReady):
		// An empty store, or an older knotd's: the next knotd to write it
		// prepares it; it holds no failure or pause this status could
		// show but for that, so open it as that knotd would.
		if s, err = state.Open(f.StateFile()); err != nil {
			return st, true, err
		}
	case err != nil:
		return st, true, err
	}
	if s != nil {
		err = readStored(&st, s)
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return st, true, err
		}
	}
	return st, true, addTranscripts(&st, f.Runs())
}

// storedStatus fills in st what the store s and the transcripts in runs
// say: the notes whose last run failed (newest first, their reasons from
// the transcripts), the paused notes, and the runs of st.Now's day.
func storedStatus(st *control.Status, s *state.Store, runs string) error {
	if err := readStored(st, s); err != nil {
		return err
	}
	return addTranscripts(st, runs)
}

// readStored fills in st what the store s says: the notes whose last run
// failed (newest first, at most maxFailuresShown) and the paused notes.
func readStored(st *control.Status, s *state.Store) error {
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
	ps, err := s.Paused()
	if err != nil {
		return err
	}
	for _, p := range ps {
		st.Paused = append(st.Paused, control.Paused{Note: p.Path, Since: p.Since, Why: p.Why})
	}
	return nil
}

// addTranscripts fills in st what the transcripts in runs say: the
// reasons of the failures, and the runs of st.Now's day.
func addTranscripts(st *control.Status, runs string) error {
	for i, f := range st.Failures {
		if sum, ok := transcript.Summarize(runs, f.RunID); ok {
			st.Failures[i].Reason = sum.Reason
		}
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
	st.Today.CostUSD, st.Today.Priced, st.Today.Metered = l.Usage.CostUSD, l.Priced, l.Metered
	return nil
}

// Run answers the notes now, changed or not, paused or not: through the
// daemon's scheduler, each after the run it may have in progress. It
// refuses, with why, a note it would not run (see whyNotRun), and says
// of each other one whether it waits its turn, waits behind its own run
// in progress, or already waited.
func (c *Control) Run(_ context.Context, notes []string) (control.Result, error) {
	v := c.v
	s, err := c.liveScheduler()
	if err != nil {
		return control.Result{}, err
	}
	rels, res := v.notesOf(notes)
	for _, rel := range rels {
		switch s.Submit(rel, Job{FiredBy: agentrun.FiredByUser, Force: true, ByHand: true}) {
		case scheduler.FollowUp:
			res.Add(rel, "queued behind its run in progress")
		case scheduler.Merged:
			res.Add(rel, "already waiting to run")
		default:
			res.Add(rel, "")
		}
	}
	return res, nil
}

// Retry runs again, through the daemon, every note whose last run failed
// at or after since, but those a retry cannot help (see whyNoRetry),
// which it refuses with why.
func (c *Control) Retry(ctx context.Context, since time.Time) (control.Result, error) {
	rels, refused, err := c.Retryable(since)
	if err != nil {
		return control.Result{}, err
	}
	if len(rels) == 0 {
		return control.Result{Refused: refused}, nil
	}
	res, err := c.Run(ctx, rels)
	res.Refused = append(refused, res.Refused...)
	return res, err
}

// Retryable returns the notes whose last run failed at or after since
// and that a retry can help, and refuses, with why, those it cannot.
func (c *Control) Retryable(since time.Time) (rels []string, refused []control.Refusal, err error) {
	failed, err := c.Failed(since)
	if err != nil {
		return nil, nil, err
	}
	for _, rel := range failed {
		if why := c.whyNoRetry(rel); why != "" {
			refused = append(refused, control.Refusal{Note: rel, Why: why})
		} else {
			rels = append(rels, rel)
		}
	}
	return rels, refused, nil
}

// whyNoRetry says why a retry of the failed strand rel cannot help, ""
// when it can: the note is gone (knotd answers its deletion on its own),
// knotd would run nothing for it (whyNotRun), or its own content was the
// failure and still is (too big, binary, not UTF-8, frontmatter or knotd
// settings it cannot use): then the save that fixes it is answered, with
// no retry. A failure the note's content did not cause (the agent's
// exit, a timeout, a missing CLI, a note knotd could not read) may pass.
func (c *Control) whyNoRetry(rel string) string {
	v := c.v
	if why := v.whyNotRun(rel); why != "" {
		return why
	}
	if _, where, err := v.recon.LstatStrand(rel); err == nil && where == reconcile.Absent {
		return "the note is deleted: knotd answers its deletion on its own"
	}
	content, _, _, tooBig, err := v.readStrand(rel, v.config().MaxStrandSize)
	if err != nil {
		return "" // a note knotd could not read: a retry after it was made readable can pass
	}
	fault := ""
	switch {
	case tooBig:
		fault = "it is larger than limits.max_strand_size"
	case bytes.IndexByte(content, 0) >= 0:
		fault = "it holds NUL bytes"
	case !utf8.Valid(content):
		fault = "it is not UTF-8 text"
	default:
		doc, err := frontmatter.Parse(content)
		switch {
		case err != nil:
			fault = "its frontmatter cannot be read"
		case len(doc.Fields.Problems) > 0:
			fault = "its knotd settings cannot be used"
		case doc.Fields.Model != "" && agentrun.ValidateModel(doc.Fields.Model) != nil:
			fault = "its knot_model cannot be used"
		default:
			if _, err := frontmatter.ResolveMode(doc.Fields); err != nil {
				fault = "its knot_mode cannot be used"
			}
		}
	}
	if fault == "" {
		return ""
	}
	return "a retry would fail the same way: " + fault + " (the save that fixes it is answered)"
}

// Failed returns the notes whose last run failed at or after since, in
// path order.
func (c *Control) Failed(since time.Time) ([]string, error) {
	v := c.v
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
func (c *Control) Pause(_ context.Context, notes []string, why string) (control.Result, error) {
	v := c.v
	if strings.TrimSpace(why) == "" {
		why = "paused by knotd pause"
	}
	rels, res := v.notesOf(notes)
	now := v.now().UTC()
	var paused []string
	err := v.store.Update(func(tx *state.Tx) error {
		res.Done, res.Did, paused = nil, nil, nil // (the update may be tried again)
		for _, rel := range rels {
			isNew, err := tx.Pause(rel, now, why)
			if err != nil {
				return err
			}
			if isNew {
				res.Add(rel, "")
				paused = append(paused, rel)
			} else {
				res.Add(rel, "already paused")
			}
		}
		return nil
	})
	if err != nil {
		return control.Result{}, err
	}
	for _, rel := range paused {
		v.log.Info("note paused: its changes wait until it is resumed", "strand", rel, "why", why)
	}
	return res, nil
}

// Resume resumes the notes (every paused one when notes is empty). A
// note changed while it was paused is answered now when the daemon runs,
// or at the next start or pass.
func (c *Control) Resume(_ context.Context, notes []string) (control.Result, error) {
	v := c.v
	var rels []string
	var refused []control.Refusal
	if len(notes) == 0 {
		ps, err := v.store.Paused()
		if err != nil {
			return control.Result{}, err
		}
		for _, p := range ps {
			rels = append(rels, p.Path)
		}
	} else {
		// A paused note is resumed whatever became of it (deleted, ruled
		// off since); one that is not paused is refused only when knotd
		// would not run it anyway.
		for _, n := range notes {
			rel, why := noteOf(n)
			if why != "" {
				refused = append(refused, control.Refusal{Note: n, Why: why})
			} else if !slices.Contains(rels, rel) {
				rels = append(rels, rel)
			}
		}
	}
	var res control.Result
	var resumed []string
	err := v.store.Update(func(tx *state.Tx) error {
		res, resumed = control.Result{Refused: slices.Clone(refused)}, nil // (the update may be tried again)
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
				res.Add(rel, "")
				resumed = append(resumed, rel)
			} else {
				res.Add(rel, "was not paused")
			}
		}
		return nil
	})
	if err != nil {
		return control.Result{}, err
	}
	kept := res.Done[:0:0]
	for _, rel := range res.Done {
		if res.Did[rel] != "" {
			if why := v.whyNotRun(rel); why != "" {
				res.Refused = append(res.Refused, control.Refusal{Note: rel, Why: why})
				delete(res.Did, rel)
				continue
			}
		}
		kept = append(kept, rel)
	}
	res.Done = kept
	s := v.live.Load()
	for _, rel := range resumed {
		v.log.Info("note resumed", "strand", rel)
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
func (c *Control) liveScheduler() (*scheduler.Scheduler[Job], error) {
	v := c.v
	if s := v.live.Load(); s != nil {
		return s, nil
	}
	if d := v.answering.LastDecision(); d != nil && !d.Answer {
		return nil, fmt.Errorf("this device stands by: %s", answer.StandbyReason(*d))
	}
	return nil, errors.New("knotd is not answering the vault yet (it is starting); try again in a moment")
}

// notesOf turns the vault-relative paths the user named into strands,
// refusing, with why, what knotd would not run (see noteOf and
// whyNotRun).
func (v *Vault) notesOf(notes []string) ([]string, control.Result) {
	var res control.Result
	var rels []string
	for _, n := range notes {
		rel, why := noteOf(n)
		switch {
		case why != "":
		case slices.Contains(rels, rel):
			continue
		default:
			why = v.whyNotRun(rel)
		}
		if why != "" {
			res.Refused = append(res.Refused, control.Refusal{Note: n, Why: why})
		} else {
			rels = append(rels, rel)
		}
	}
	return rels, res
}

// noteOf returns the strand path of a note the user named, or why it
// is none: outside the vault, not a Markdown note, a tie-off.
func noteOf(n string) (rel, why string) {
	rel = strings.TrimPrefix(n, "./")
	switch {
	case strand.ValidateRel(rel) != nil:
		return "", "not a path inside the vault"
	case !strand.IsStrandPath(rel):
		return "", "not a note knotd answers (a Markdown file that is not a tie-off)"
	}
	return rel, ""
}

// whyNotRun says why a run by hand of the strand rel would run nothing,
// "" when it would run: no such note (and none whose deletion waits), a
// path that is no regular file (a symbolic link, a FIFO, a folder) or
// lies below a symbolic link to a folder, an ignored one, one a rule
// keeps from every agent, one whose frontmatter says knot_mode: off or
// leaves out its event, an empty one. What only a run can find (a
// strand knotd may not read, frontmatter it cannot parse) is left to
// the run, which records it as its failure.
func (v *Vault) whyNotRun(rel string) string {
	// The ignore files on the way to it, which no walk may have read yet
	// (knotd run with no daemon walks nothing).
	if err := v.rules.Load(v.root, rel); err != nil {
		return fmt.Sprintf("cannot read the ignore files on the way to it: %v", err)
	}
	if dir, _, err := v.recon.LinkedDir(rel); err == nil && dir != "" {
		return fmt.Sprintf("not a note knotd answers: it is below %s, a symbolic link to a folder, which knotd does not follow", dir)
	}
	info, where, err := v.recon.LstatStrand(rel)
	switch {
	case err != nil:
		return err.Error()
	case where == reconcile.Ignored:
		return "ignored (knotd --explain-ignore says why)"
	case info != nil && !info.Mode().IsRegular():
		return fmt.Sprintf("not a note knotd answers: %s, and knotd answers only regular .md files", vaultfs.TypeName(info.Mode()))
	}
	_, has, err := v.store.Get(rel)
	if err != nil {
		return fmt.Sprintf("cannot read its record: %v", err)
	}
	if where == reconcile.Absent && !has {
		return "no such note"
	}
	sc := v.scopeOf(rel)
	if sc.Off {
		if strings.HasPrefix(sc.Why, "rule ") {
			return "not sent to any agent: " + sc.Why + " (mode: off)"
		}
		return "not sent to any agent: " + sc.Why
	}
	if where == reconcile.Absent {
		return "" // its deletion runs
	}
	content, _, _, tooBig, err := v.readStrand(rel, v.config().MaxStrandSize)
	if err != nil || tooBig || !utf8.Valid(content) {
		return "" // the run records why it cannot run
	}
	if !v.config().RunEmpty && len(bytes.TrimSpace(frontmatter.WithoutOwnKeys(content))) == 0 {
		return "it is empty: nothing to answer (it runs once it has content; run_empty: true runs it now)"
	}
	doc, err := frontmatter.Parse(content)
	if err != nil {
		return ""
	}
	if m, err := frontmatter.ResolveMode(doc.Fields); err == nil && m == frontmatter.ModeOff {
		return "its frontmatter says knot_mode: off (knotd leaves it alone until that goes)"
	}
	event := "created"
	if has {
		event = "modified"
	}
	if ev := doc.Fields.Events; ev != nil && !slices.Contains(ev, event) {
		return "its knot_events does not include " + event
	}
	if ev := sc.Events; ev != nil && !slices.Contains(ev, event) {
		return "the rules for its path do not run it on " + event
	}
	return ""
}

// stateCopyPattern names the copies of the state store CopyState writes in
// the vault's state folder.
const stateCopyPattern = "state.db.dry-run-*"

// CopyState writes a consistent copy of the state store into a new file
// (0600) in the vault's state folder and returns its path: knotd --once
// --dry-run, run while this knotd holds the store, reads it there. The
// caller removes it.
func (c *Control) CopyState(context.Context) (_ string, err error) {
	v := c.v
	// A copy a dry run could not remove (it was killed) goes with the
	// next one asked for, once an hour old.
	if old, err := filepath.Glob(filepath.Join(v.folder.Dir, stateCopyPattern)); err == nil {
		for _, p := range old {
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > time.Hour {
				if err := os.Remove(p); err != nil {
					v.log.Warn("cannot remove an old copy of the state", "file", p, "err", err)
				}
			}
		}
	}
	f, err := os.CreateTemp(v.folder.Dir, stateCopyPattern)
	if err != nil {
		return "", fmt.Errorf("vault: copy the state: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("vault: copy the state: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(f.Name()) // the copy failed; the error says why
		}
	}()
	if err := v.store.CopyTo(f); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// ReloadConfig loads the configuration again, as SIGHUP does (knotd trust
// asks for it), and returns the files read.
func (c *Control) ReloadConfig(context.Context) ([]string, error) {
	v := c.v
	r, err := v.Reload("knotd trust")
	return r.Files, err
}
