// Package ctl is the control socket's adapter of a vault (Control): what
// knotd status, run, retry, pause, resume, trust, approve, deny and
// withdraw ask of it, served by the daemon (control.Backend) or called by
// the commands on a vault they open themselves; the runs in progress
// (Active); and the status of a vault no daemon runs, from its state
// store and transcripts (StoredStatus). What it needs of the vault is
// Host.
package ctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
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
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/knotd/knotd/internal/vault/internal/answer"
	"github.com/knotd/knotd/internal/vault/internal/budget"
)

// Host is what the control adapter asks of the vault, each time it needs
// it (a reload changes the configuration; the daemon's scheduler comes
// and goes with answering; Close closes the store).
type Host interface {
	Now() time.Time      // the vault's clock
	Log() *slog.Logger   // where pauses and resumes are said
	Store() *state.Store // the vault's state store
	DefaultAgent() string
	// Live returns the daemon's scheduler while this device answers the
	// vault; ok is false otherwise.
	Live() (s Scheduler, ok bool)
	// WhyNotRun says why a run by hand of the strand rel would run
	// nothing, "" when it would run.
	WhyNotRun(rel string) string
	// Deleted reports whether the strand rel is gone from the disk, as far
	// as knotd can tell.
	Deleted(rel string) bool
	// ReadStrand reads the strand rel, bounded by limits.max_strand_size
	// (tooBig: it is larger).
	ReadStrand(rel string) (content []byte, tooBig bool, err error)
	// Reload loads the configuration again, as SIGHUP does, and returns
	// the files read.
	Reload(why string) (files []string, err error)
	// Questions returns the questions that wait for the user's answer,
	// oldest first.
	Questions() ([]control.Question, error)
	// AnswerQuestion answers the question whose whole id is id; when no
	// question with that id waits, its error wraps control.ErrNoQuestion.
	AnswerQuestion(id string, verdict question.Verdict, why string, from question.Source) (control.Question, error)
}

// Scheduler is the daemon's scheduler, as the control adapter uses it.
type Scheduler interface {
	// Submit asks for a run of the strand rel that the user asked for:
	// byHand (knotd run, retry) runs it changed or not, paused or not;
	// otherwise (a resumed note) only a change it has runs.
	Submit(rel string, byHand bool) scheduler.Submitted
	// Queued lists the runs waiting: for their turn, or behind their own
	// run in progress.
	Queued() []control.Queued
}

// Options are what the control adapter knows of the vault when it is
// made: the vault's parts it reads.
type Options struct {
	Root      string          // the vault's absolute path
	Since     time.Time       // when the vault was opened
	Device    statedir.Device // this device
	Folder    statedir.Folder // the vault's folder in the state directory
	Active    *Active         // the runs in progress
	Answering *answer.Device  // whether this device answers the vault
	Budget    *budget.Budget  // the day's budget, and what it defers
}

// What knotd status, run, retry, pause and resume ask of a vault: the
// daemon serves them (control.Backend) through its control socket, and
// the commands do them on their own (RunNotes, the store's pauses) when
// no daemon runs.

var (
	_ control.Backend     = (*Control)(nil)
	_ control.StateCopier = (*Control)(nil)
	_ control.Reloader    = (*Control)(nil)
)

// Control is what the control socket calls on a vault (knotd status,
// run, retry, pause, resume, trust, and a dry run's copy of the state):
// the daemon serves it, and the commands call it on a vault they open
// themselves when no daemon runs.
type Control struct {
	host Host
	o    Options
}

// New returns the control adapter of the vault host, with options o.
func New(host Host, o Options) *Control { return &Control{host: host, o: o} }

// maxFailuresShown bounds the failures a status lists.
const maxFailuresShown = 50

// Active is the runs in progress, for status: the pipeline says when
// each starts and ends. Its methods are safe for concurrent use.
type Active struct {
	mu   sync.Mutex
	runs map[string]control.Running
}

// Start says the run r is in progress.
func (a *Active) Start(r control.Running) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.runs == nil {
		a.runs = make(map[string]control.Running)
	}
	a.runs[r.Note] = r
}

// Done says the run of the strand rel ended.
func (a *Active) Done(rel string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.runs, rel)
}

// list returns the runs in progress, oldest first, as of now.
func (a *Active) list(now time.Time) []control.Running {
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
	a := c.o.Active
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.runs)
}

// Status says what the daemon does: whether this device answers, the
// runs in progress and waiting, the notes whose last run failed, the
// paused notes, the questions that wait and the day's runs.
func (c *Control) Status(context.Context) (control.Status, error) {
	now := c.host.Now().UTC()
	st := control.Status{
		Vault: c.o.Root, PID: os.Getpid(), Since: c.o.Since, Now: now,
		Device: c.o.Device.Name, DeviceID: c.o.Device.ID, Agent: c.host.DefaultAgent(),
		Running: c.o.Active.list(now), Queued: []control.Queued{}, Failures: []control.Failure{}, Paused: []control.Paused{}, Deferred: []control.Paused{},
		Questions: []control.Question{},
	}
	for rel, d := range c.o.Budget.Deferred() {
		st.Deferred = append(st.Deferred, control.Paused{Note: rel, Since: d.Since, Why: d.Why})
	}
	slices.SortFunc(st.Deferred, func(a, b control.Paused) int { return strings.Compare(a.Note, b.Note) })
	switch d := c.o.Answering.LastDecision(); {
	case d == nil:
		st.Standby = "starting: it has not yet decided whether this device answers the vault"
	case d.Answer:
		st.Answering = true
	default:
		st.Standby = answer.StandbyReason(*d)
	}
	if s, ok := c.host.Live(); ok {
		st.Queued = append(st.Queued, s.Queued()...)
	}
	if sh, ok := c.host.(interface{ Schedules() []control.Schedule }); ok {
		st.Schedules = sh.Schedules()
	}
	if err := storedStatus(&st, c.host.Store(), c.o.Folder.Runs()); err != nil {
		return st, err
	}
	for i, f := range st.Failures {
		st.Failures[i].NoRetry = c.whyNoRetry(f.Note)
	}
	return st, nil
}

// StoredStatus is the status of the vault at root, whose folder in the
// state directory is f, when no daemon runs: what its state store and
// transcripts say (failures, paused notes, questions, the day's runs).
// It changes nothing.
func StoredStatus(f statedir.Folder, root string) (st control.Status, err error) {
	st = control.Status{Vault: root, Now: time.Now().UTC(), Running: []control.Running{}, Queued: []control.Queued{}, Failures: []control.Failure{}, Paused: []control.Paused{}, Deferred: []control.Paused{}, Questions: []control.Question{}}
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
			return st, err
		}
	case err != nil:
		return st, err
	}
	if s != nil {
		err = readStored(&st, s)
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return st, err
		}
	}
	return st, addTranscripts(&st, f.Runs())
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
// failed (newest first, at most maxFailuresShown), the paused notes and
// the questions that wait (oldest first).
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
	qs, err := s.Questions()
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.Waiting() {
			st.Questions = append(st.Questions, QuestionOf(q.ID, q.Strand, q.Agent, q.RunID, q.Asked, q.Call))
		}
	}
	slices.SortStableFunc(st.Questions, func(a, b control.Question) int { return a.Asked.Compare(b.Asked) })
	return nil
}

// QuestionOf is a question as the control socket says it.
func QuestionOf(id, note, agent, runID string, asked time.Time, call question.Call) control.Question {
	return control.Question{ID: id, Note: note, Agent: agent, RunID: runID, Asked: asked.UTC(), Summary: control.Summary(call), Call: call}
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
	s, err := c.liveScheduler()
	if err != nil {
		return control.Result{}, err
	}
	rels, res := NotesOf(notes, c.host.WhyNotRun)
	for _, rel := range rels {
		switch s.Submit(rel, true) {
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
	if why := c.host.WhyNotRun(rel); why != "" {
		return why
	}
	if c.host.Deleted(rel) {
		return "the note is deleted: knotd answers its deletion on its own"
	}
	content, tooBig, err := c.host.ReadStrand(rel)
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
	var rels []string
	err := c.host.Store().ForEach(func(rec state.Record) error {
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
	if strings.TrimSpace(why) == "" {
		why = "paused by knotd pause"
	}
	rels, res := NotesOf(notes, c.host.WhyNotRun)
	now := c.host.Now().UTC()
	var paused []string
	err := c.host.Store().Update(func(tx *state.Tx) error {
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
		c.host.Log().Info("note paused: its changes wait until it is resumed", "strand", rel, "why", why)
	}
	return res, nil
}

// Resume resumes the notes (every paused one when notes is empty). A
// note changed while it was paused is answered now when the daemon runs,
// or at the next start or pass.
func (c *Control) Resume(_ context.Context, notes []string) (control.Result, error) {
	var rels []string
	var refused []control.Refusal
	if len(notes) == 0 {
		ps, err := c.host.Store().Paused()
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
			rel, why := NoteOf(n)
			if why != "" {
				refused = append(refused, control.Refusal{Note: n, Why: why})
			} else if !slices.Contains(rels, rel) {
				rels = append(rels, rel)
			}
		}
	}
	var res control.Result
	var resumed []string
	err := c.host.Store().Update(func(tx *state.Tx) error {
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
			if why := c.host.WhyNotRun(rel); why != "" {
				res.Refused = append(res.Refused, control.Refusal{Note: rel, Why: why})
				delete(res.Did, rel)
				continue
			}
		}
		kept = append(kept, rel)
	}
	res.Done = kept
	s, live := c.host.Live()
	for _, rel := range resumed {
		c.host.Log().Info("note resumed", "strand", rel)
		if live {
			// A change made while it was paused runs now; an unchanged
			// strand has nothing to do.
			s.Submit(rel, false)
		}
	}
	return res, nil
}

// liveScheduler returns the scheduler of the daemon while this device
// answers the vault.
func (c *Control) liveScheduler() (Scheduler, error) {
	if s, ok := c.host.Live(); ok {
		return s, nil
	}
	if d := c.o.Answering.LastDecision(); d != nil && !d.Answer {
		return nil, fmt.Errorf("this device stands by: %s", answer.StandbyReason(*d))
	}
	return nil, errors.New("knotd is not answering the vault yet (it is starting); try again in a moment")
}

// NotesOf turns the vault-relative paths the user named into strands,
// refusing, with why, what knotd would not run (see NoteOf, and
// whyNotRun, which says why a run by hand of a strand would run nothing).
func NotesOf(notes []string, whyNotRun func(rel string) string) ([]string, control.Result) {
	var res control.Result
	var rels []string
	for _, n := range notes {
		rel, why := NoteOf(n)
		switch {
		case why != "":
		case slices.Contains(rels, rel):
			continue
		default:
			why = whyNotRun(rel)
		}
		if why != "" {
			res.Refused = append(res.Refused, control.Refusal{Note: n, Why: why})
		} else {
			rels = append(rels, rel)
		}
	}
	return rels, res
}

// NoteOf returns the strand path of a note the user named, or why it
// is none: outside the vault, not a Markdown note, a tie-off.
func NoteOf(n string) (rel, why string) {
	rel = strings.TrimPrefix(n, "./")
	switch {
	case strand.ValidateRel(rel) != nil:
		return "", "not a path inside the vault"
	case !strand.IsStrandPath(rel):
		return "", "not a note knotd answers (a Markdown file that is not a tie-off)"
	}
	return rel, ""
}

// stateCopyPattern names the copies of the state store CopyState writes in
// the vault's state folder.
const stateCopyPattern = "state.db.dry-run-*"

// CopyState writes a consistent copy of the state store into a new file
// (0600) in the vault's state folder and returns its path: knotd --once
// --dry-run, run while this knotd holds the store, reads it there. The
// caller removes it.
func (c *Control) CopyState(context.Context) (_ string, err error) {
	dir := c.o.Folder.Dir
	// A copy a dry run could not remove (it was killed) goes with the
	// next one asked for, once an hour old.
	if old, err := filepath.Glob(filepath.Join(dir, stateCopyPattern)); err == nil {
		for _, p := range old {
			if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > time.Hour {
				if err := os.Remove(p); err != nil {
					c.host.Log().Warn("cannot remove an old copy of the state", "file", p, "err", err)
				}
			}
		}
	}
	f, err := os.CreateTemp(dir, stateCopyPattern)
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
	if err := c.host.Store().CopyTo(f); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// ReloadConfig loads the configuration again, as SIGHUP does (knotd trust
// asks for it), and returns the files read.
func (c *Control) ReloadConfig(context.Context) ([]string, error) {
	return c.host.Reload("knotd trust")
}
