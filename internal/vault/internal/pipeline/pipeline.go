// Package pipeline is the pipeline of one strand's change in a vault:
// fold, look, decide, prepare, run, record (see Pipeline; the comment
// after New walks through the steps, in the order of this file). It
// decides which conversation a strand continues and writes its session
// into it without clobbering a save (session.go), builds the agent's
// request (request.go), records the run's transcript (transcript.go),
// and journals the reply so that a crash anywhere loses nothing and runs
// nothing twice. What it needs of the vault (its configuration, state
// store, files, reconciler, agent runner, budget and test seams) is Host.
package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vault/internal/timing"
	"github.com/knotd/knotd/internal/vaultfs"
)

// Pipeline is the pipeline of one strand's change (Process): fold, look,
// decide, prepare, run, record, and the journal that makes a finished
// run survive a crash; runmarker.go, request.go, transcript.go and
// unwritable.go hold its steps' helpers, session.go (sessionKeeper) its
// writes into the strand. What it needs of the vault is Host.
type Pipeline struct {
	h Host
	// sess decides which conversation a strand continues and writes
	// into strands without clobbering a save (session.go).
	sess sessionKeeper
	// ties looks at tie-offs that cannot be written, and keeps the
	// strands whose change waits for one (unwritable.go).
	ties tieOffs
}

// New returns the pipeline of the vault h.
func New(h Host) *Pipeline {
	pl := &Pipeline{h: h}
	pl.sess.pl = pl
	pl.ties.h = h
	return pl
}

// The pipeline of one strand. A settled change of the strand at rel
// reaches Process (the scheduler's work function), which takes it through
// these steps, in this file and in this order:
//
//  0. fold: the strand's journaled runs finished (finishJournaled), and
//     the sync conflict copies of its tie-off and note folded in
//     (Host.Fold: the vault's reconciler);
//  1. look: the strand on disk and its record in the state store;
//  2. decide: whether the change runs, is recorded without a run (a skip),
//     or is recorded as a failure that explains why it cannot run; the
//     tie-off's run markers may show it is answered already (runmarker.go);
//  3. prepare: the conversation it continues and the strand's session,
//     written into the strand without clobbering a save (session.go);
//  4. run: the agent, given the prompt built from the strand, its tie-off
//     and the Event Context (request.go), its output recorded in the run's
//     transcript as it comes (transcript.go);
//  5. record: journal the reply, append the tie-off section, commit the
//     strand's new record, in the order that survives a crash anywhere.
//
// Then Process looks whether the strand moved on during the run, and the
// scheduler runs a follow-up if it did. Steps 1–3 (plan) write nothing
// but the strand's session; --dry-run shows what they planned.

// Job is what the scheduler hands the processor for one strand.
type Job struct {
	// FiredBy says what made knotd look at the strand.
	FiredBy agentrun.FiredBy
	// Force runs the strand even if its content is the processed one
	// (--all, knotd run).
	Force bool
	// ByHand says the user asked for the run (knotd run, retry): it
	// runs even if the strand is paused.
	ByHand bool
	// Scheduled, when set, is the occurrence of the note's schedule that
	// fell due: the note runs with event Scheduled, changed or not (a
	// note that is gone does not run). Pause, budgets, breakers, knot_mode
	// and knot_events apply as to any event.
	Scheduled *agentrun.Occurrence
}

// RunReport is what processing one strand did, for logs and the --once
// summary. A strand with nothing to do has Ran false.
type RunReport struct {
	Strand   string           `json:"strand"`
	Event    strand.EventType `json:"event"`
	RunID    string           `json:"run_id,omitempty"`
	Agent    string           `json:"agent,omitempty"`
	Outcome  agentrun.Outcome `json:"outcome,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	Duration time.Duration    `json:"duration_ns"`
	Ran      bool             `json:"ran"`
	// Skipped says why a change was recorded without a run (knot_mode
	// off, an event not in knot_events, only knotd's own keys changed).
	Skipped string `json:"skipped,omitempty"`
	// Usage is the run's tokens and cost, as its CLI reported them.
	Usage *agentrun.Usage `json:"usage,omitempty"`
}

// Failed reports whether the run counts as failed for --once's exit
// status.
func (r RunReport) Failed() bool { return r.Ran && r.Outcome != agentrun.OutcomeOK }

// emptySkip is the reason an empty strand is not run.
const emptySkip = "the note is empty; it runs once it has content (run_empty: true runs it now)"

// PausedSkip is the reason a paused strand's change is not run yet.
const PausedSkip = "the note is paused (knotd resume answers its changes)"

// BudgetSkip begins the reason a change waits for the day's budget.
const BudgetSkip = "waits for the budget: "

// errRetry asks the processor to start over: the strand changed under it.
var errRetry = errors.New("note changed while knotd was working on it")

// maxAttempts bounds how often Process starts over because the user kept
// saving while knotd wrote the strand's frontmatter.
const maxAttempts = 5

// Process handles one settled change of the strand at rel: it first
// finishes the strand's runs still journaled after a failed write, and
// folds sync conflict copies into the strand and its tie-off; then it
// takes the change through the pipeline (processOnce), starting over when
// the user saved while knotd wrote the strand's session; finally it
// reports whether the strand moved on during the run (then the caller
// schedules a follow-up).
func (pl *Pipeline) Process(ctx context.Context, rel string, job Job) (rep RunReport, again bool, err error) {
	h := pl.h
	h.Claim(rel)
	defer h.Release(rel)
	defer pl.sess.sessions.release(rel)
	if err := pl.finishJournaled(rel); err != nil {
		return rep, false, err
	}
	h.Fold(rel)
	for attempt := 1; ; attempt++ {
		rep, err = pl.processOnce(ctx, rel, job, attempt == maxAttempts)
		if !errors.Is(err, errRetry) || attempt == maxAttempts {
			break
		}
	}
	if err != nil || !rep.Ran {
		return rep, false, err
	}
	again, err = pl.movedOn(rel)
	return rep, again, err
}

// finishJournaled finishes the runs of the strand at rel that are still
// journaled because their tie-off or state write failed (a full disk)
// since knotd started: their replies are appended once, before anything
// decides whether the strand needs another run. An error leaves them
// journaled and keeps the strand from running again meanwhile.
func (pl *Pipeline) finishJournaled(rel string) error {
	h := pl.h
	if h.Dry() {
		return nil
	}
	ps, err := h.Store().Pendings()
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.Record.Path != rel {
			continue
		}
		j, err := DecodeJournal(p.Journal)
		if err == nil {
			err = pl.complete(p, j, true)
		}
		if kept := (*ReplyKept)(nil); errors.As(err, &kept) {
			pl.sayKept(kept)
			continue
		}
		if err != nil {
			return fmt.Errorf("vault: %s: finish journaled run %s: %w", rel, p.RunID, err)
		}
		h.Log().Info("finished a run that was journaled after a failed write", "strand", rel, "run", p.RunID)
	}
	return nil
}

// Recover finishes the runs a crash (or a tie-off that could not be
// written) left journaled, as the vault opens: each reply is appended to
// its tie-off unless it is already there, then the run is committed. A
// run that still cannot be finished is reported and stays journaled for
// the next start; it does not keep knotd from serving the rest of the
// vault.
func (pl *Pipeline) Recover() error {
	h := pl.h
	ps, err := h.Store().Pendings()
	if err != nil {
		return err
	}
	for _, p := range ps {
		j, err := DecodeJournal(p.Journal)
		if err == nil {
			err = pl.complete(p, j, true)
		}
		if kept := (*ReplyKept)(nil); errors.As(err, &kept) {
			pl.sayKept(kept)
			continue
		}
		if err != nil {
			h.Log().Error("cannot finish a run journaled before knotd stopped; it stays journaled and is retried at the next start",
				"strand", p.Record.Path, "run", p.RunID, "err", err)
			continue
		}
		h.Log().Info("finished a run journaled before knotd stopped", "strand", p.Record.Path, "run", p.RunID)
	}
	return nil
}

// movedOn reports whether the strand at rel differs from what was last
// processed: the user saved it again during the run.
func (pl *Pipeline) movedOn(rel string) (bool, error) {
	h := pl.h
	rec, has, err := h.Store().Get(rel)
	if err != nil {
		return false, err
	}
	info, where, err := h.LstatStrand(rel)
	if err != nil {
		return false, err
	}
	switch {
	case where == Ignored:
		return false, nil
	case where == Absent:
		return has, nil
	case !has:
		return true, nil
	case state.StampOf(info) == rec.Stamp:
		return false, nil
	}
	same, err := h.SameContent(rel, rec.Hash)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return false, nil // unreadable: it was just reported; a save makes it run
	case err != nil:
		return false, err // never a follow-up for a strand that cannot be looked at
	}
	return !same, nil
}

// work is one change on its way through the pipeline: what its steps
// learned so far.
type work struct {
	rel, abs string
	event    strand.EventType
	rec      state.Record
	has      bool
	// content is the strand as the agent sees it (after knotd wrote its
	// session); previous is the last processed content.
	content, previous []byte
	// hash is the hash of the strand's version being processed: of
	// content, or of the whole file when it is too big to be read
	// (tooBig).
	hash   state.Hash
	tooBig bool
	// userContent is the content before knotd touched it, for the diff.
	userContent []byte
	// unsyncedDir is the strand's directory when knotd renamed its own
	// version of the strand (its knot_session) into it without syncing the
	// directory, so as not to hold up the run: it must be synced before
	// the run's record, which describes that version, is committed.
	unsyncedDir string
	info        fs.FileInfo
	fields      frontmatter.Fields
	mode        frontmatter.Mode
	agentName   string
	agent       agentrun.Agent
	session     string
	newSession  bool
	resume      string
	// keeps says that the agent keeps a conversation (so knotd writes
	// the strand's knot_session).
	keeps bool
	// wrote holds the hashes of the versions knotd wrote into the strand
	// (its knot_session), kept in its record (state.Record.Wrote).
	wrote []state.Hash
	// lastAttempt is set on the last attempt to prepare the run: a write
	// into the strand that the user's saves keep refusing is given up.
	lastAttempt bool
	// guard watches the file knotd's write of the strand replaced, for a
	// save that was under way into it; settled before the run's record
	// is committed (see settle).
	guard *vaultfs.Guard
	// failure, when set, is why the run cannot happen; it becomes the
	// tie-off's failure section.
	failure string
	// tail is the newest part of the strand's tie-off (nil when it has
	// none, or it could not be read), once tailRead.
	tail     *tieoff.Window
	tailErr  error
	tailRead bool
	// answer, when set, is the tie-off section that already answers this
	// version: it is recorded without a run (see answered).
	answer *tieoff.Section
	// marker is the hash a run marker records for content, once computed.
	marker string
	// scope is what the configuration's rules say of the strand's path.
	scope config.Scope
	// cont, when set, is the answered question whose turn this run
	// continues (agentrun.Request.Continuing).
	cont *state.Question
}

// processOnce takes the strand at rel through the pipeline once: plan (look,
// decide, prepare), then either record the change without a run
// (commitSkip), or run the agent and record its reply.
func (pl *Pipeline) processOnce(ctx context.Context, rel string, job Job, last bool) (RunReport, error) {
	h := pl.h
	rep := RunReport{Strand: rel}
	asked := job
	var cont *state.Question
	if !h.Dry() {
		var err error
		if cont, err = h.QuestionsBefore(rel); err != nil {
			return rep, err
		}
	}
	if cont != nil {
		// The user answered the question the strand's last turn held:
		// that turn goes on first (a change saved with the answer
		// follows, since the record keeps the version before it).
		job = Job{FiredBy: agentrun.FiredByAnswer, Force: true, ByHand: job.ByHand}
	}
	w, skip, err := pl.plan(rel, job, last)
	defer pl.sess.settle(w)
	if err != nil || w == nil {
		rep.Skipped = skip
		return rep, err
	}
	if cont != nil && (skip != "" || w.failure != "" || w.event == strand.Deleted) {
		// The strand can no longer go on with that turn (turned off,
		// emptied, deleted, unreadable): the answer stays in the
		// tie-off, and the strand's change is taken as usual next.
		h.Log().Warn("a question's answer cannot continue its turn; the note's change is taken as usual", "strand", rel, "question", cont.ID, "why", firstLine(skip+w.failure))
		if err := h.Continued(cont.ID); err != nil {
			return rep, err
		}
		return pl.processOnce(ctx, rel, asked, last)
	}
	rep.Event = w.event
	if skip != "" {
		rep.Skipped = skip
		return rep, pl.commitSkip(w, skip)
	}
	if cont != nil {
		w.cont, w.event = cont, cont.Event
		if cont.Resume != "" {
			w.resume = cont.Resume
		}
	} else if !h.Dry() {
		// A change that runs meets the strand's waiting questions: they
		// are withdrawn, and the agent gets the change.
		if err := h.WithdrawQuestions(rel); err != nil {
			return rep, err
		}
	}
	defer h.Done(rel)
	rep, r, err := pl.run(ctx, w, job)
	if r == nil || err != nil {
		return rep, err
	}
	defer r.log.close()
	if !h.AnswersHold(ctx) {
		// Another device's claim of the vault won while the agent ran
		// (two first claims at the same moment): that device answers
		// the change; nothing is appended or recorded.
		h.Log().Warn("another device answers the vault: this run's reply is not appended, and the change is left to that device", "strand", w.rel, "run", rep.RunID)
		rep.Ran = false
		return rep, nil
	}
	return rep, pl.record(ctx, w, rep, r)
}

// plan is the pipeline's first three steps, which run no agent and (but
// for the strand's session) write nothing: look, decide and prepare. It
// returns nil work when there is nothing to do, a skip reason when the
// change is recorded without a run, and errRetry when the strand changed
// while knotd wrote its frontmatter. --dry-run shows what it planned.
func (pl *Pipeline) plan(rel string, job Job, last bool) (w *work, skip string, err error) {
	h := pl.h
	if !job.ByHand {
		// A paused strand's change waits, unrecorded, until the strand
		// is resumed (or run by hand): nothing is lost.
		if _, paused, err := h.Store().PausedOf(rel); err != nil || paused {
			if paused {
				skip = PausedSkip
			}
			return nil, skip, err
		}
	}
	w, skip, err = pl.look(rel, job)
	if err != nil || w == nil || skip != "" {
		return w, skip, err
	}
	w.lastAttempt = last
	if w.failure == "" {
		skip, err = pl.decide(w, job)
		if skip == emptySkip && !w.has {
			// A new strand that is empty is not recorded at all: it runs
			// as Created once it has content.
			return nil, skip, nil
		}
		if err != nil || skip != "" {
			return w, skip, err
		}
	}
	if why := pl.ties.check(rel); why != nil {
		// Its reply, or its failure, could never be recorded: the agent
		// is not run, and the change waits, unrecorded.
		return nil, pl.ties.waitFor(rel, why), nil
	}
	if w.failure == "" && !h.Dry() {
		// A change that would run, over the day's budget, waits
		// unrecorded until the budget allows (or a run by hand):
		// nothing is lost. One that runs counts against it from
		// now (the scheduler's work ends it: landed).
		if ok, why, err := h.Budget().Allows(rel, job.ByHand); err != nil || !ok {
			return nil, BudgetSkip + why, err
		}
	}
	if w.failure == "" && !job.ByHand && h.Dry() {
		// A dry run says so too, and records nothing.
		if why, err := h.Budget().WouldDefer(rel); err != nil || why != "" {
			return nil, BudgetSkip + why, err
		}
	}
	return w, "", pl.prepare(w)
}

// look is step 1: the strand on disk and what the state recorded of it.
// A strand gone from the disk that has a record is a deletion; one that
// is unchanged since its record (a touch) is restamped and needs nothing
// more (nil work). A strand knotd may not read gets a failure.
func (pl *Pipeline) look(rel string, job Job) (*work, string, error) {
	h := pl.h
	abs, err := strand.Abs(h.Root(), rel)
	if err != nil {
		return nil, "", err
	}
	w := &work{rel: rel, abs: abs}
	w.rec, w.has, err = h.Store().Get(rel)
	if err != nil {
		return nil, "", err
	}
	w.session, w.resume = w.rec.Session, w.rec.Resume
	linfo, where, err := h.LstatStrand(rel)
	if err != nil {
		return nil, "", fmt.Errorf("vault: %s: %w", rel, err)
	}
	switch {
	case where == Ignored:
		return nil, "ignored", nil
	case where == Absent && !w.has:
		return nil, "", nil
	case where == Absent && job.Scheduled != nil:
		return nil, "", nil // a note that is gone does not run on its schedule
	case where == Absent:
		w.event, w.hash = strand.Deleted, w.rec.Hash
		if w.previous, _, err = h.Store().Content(w.rel); err != nil {
			return nil, "", err
		}
		return w, "", nil
	}

	w.event = strand.Created
	if w.has {
		w.event = strand.Modified
	}
	if job.Scheduled != nil {
		w.event = strand.Scheduled
	}
	content, hash, info, tooBig, err := h.ReadStrand(rel, h.Config().MaxStrandSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", errRetry // deleted between the look and the read
	}
	if errors.Is(err, fs.ErrPermission) {
		// Recorded with its stamp, so that it fails once, not at every
		// pass; the next save after the user fixed it runs it.
		w.info = linfo
		w.failure = fmt.Sprintf("knotd may not read the note (%v), so no agent was run. Make it readable and save it again.", err)
		return w, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("vault: read %s: %w", rel, err)
	}
	if w.has && hash == w.rec.Hash && !job.Force && job.Scheduled == nil {
		// Nothing new (a touch, or already processed): remember the stamp.
		if st := h.Stamp(info); !h.Dry() && st != w.rec.Stamp {
			return nil, "", h.Store().Update(func(tx *state.Tx) error { return tx.Restamp(rel, st) })
		}
		return nil, "", nil
	}
	w.info, w.content, w.userContent, w.hash, w.tooBig = info, content, content, hash, tooBig
	if w.has {
		if w.previous, _, err = h.Store().Content(rel); err != nil {
			return nil, "", err
		}
	}
	return w, "", nil
}

// decide is step 2: whether the change runs. It returns a skip reason
// when the change is recorded without a run (already answered in the
// tie-off, knot_mode: off, an event not in knot_events, only knotd's own
// keys changed, an empty strand), or sets w.failure when the strand
// cannot be run (too big, binary, not UTF-8, unreadable frontmatter or
// settings, an unknown agent or model): the failure is recorded as the
// run's section. Otherwise it resolves the strand's settings and agent.
func (pl *Pipeline) decide(w *work, job Job) (string, error) {
	h := pl.h
	sc := h.ScopeOf(w.rel)
	if sc.Off {
		// Before anything else: a note the rules keep from every agent
		// gets no run and no section, whatever it holds.
		return "not sent to any agent: " + sc.Why, nil
	}
	w.scope = sc
	if w.event == strand.Deleted {
		return pl.decideDeleted(w, job)
	}
	if !w.tooBig && !job.Force && w.event != strand.Scheduled {
		if sec, ok := pl.answered(w); ok {
			w.answer = &sec
			return "already answered in its tie-off by run " + sec.RunID, nil
		}
	}
	if !w.has && w.event == strand.Created && pl.answeredBefore(w) {
		// New to this device's state, but its tie-off answered an earlier
		// version of it (on another device, or before the state was
		// lost): a change of an old note, whose earlier version knotd
		// does not have.
		w.event = strand.Modified
	}

	content := w.content
	switch {
	case w.tooBig:
		w.failure = fmt.Sprintf("The note is %s, more than knotd's limit of %s, so no agent was run. Make it smaller, add it to .knotignore, or raise limits.max_strand_size in the configuration.",
			config.FormatSize(w.info.Size()), config.FormatSize(h.Config().MaxStrandSize))
		w.content = nil
		return "", nil
	case bytes.IndexByte(content, 0) >= 0:
		w.failure = "The note contains NUL bytes: it looks like a binary file named .md, so no agent was run. Rename it, or add it to .knotignore."
		return "", nil
	case !utf8.Valid(content):
		w.failure = "The note is not valid UTF-8 text, so no agent was run. Save it as UTF-8 in your editor."
		return "", nil
	case !h.Config().RunEmpty && len(bytes.TrimSpace(frontmatter.WithoutOwnKeys(content))) == 0:
		// A note being created (Obsidian's Untitled.md, a touch) or
		// emptied: nothing to answer, and nothing is written into it
		// while the user is still naming it. It runs once it has
		// content, as Created if knotd never ran it.
		return emptySkip, nil
	}

	doc, err := frontmatter.Parse(content)
	if err != nil {
		w.failure = fmt.Sprintf("The note's frontmatter cannot be read, so no agent was run: %v", err)
		return "", nil
	}
	w.fields = doc.Fields
	if w.mode, err = frontmatter.ResolveMode(doc.Fields); err != nil {
		w.failure = fmt.Sprintf("%v. No agent was run.", err)
		return "", nil
	}
	if doc.Fields.Mode == "" && sc.Mode != "" {
		w.mode = frontmatter.Mode(sc.Mode) // the rules' mode, unless the note sets one
	}
	if w.mode == frontmatter.ModeOff {
		return "knot_mode: off", nil
	}
	if ev := doc.Fields.Events; ev != nil && !slices.Contains(ev, strings.ToLower(w.event.String())) {
		return "knot_events does not include " + strings.ToLower(w.event.String()), nil
	}
	if ev := sc.Events; ev != nil && !slices.Contains(ev, strings.ToLower(w.event.String())) {
		return "the rules for its path do not run it on " + strings.ToLower(w.event.String()), nil
	}
	if w.event == strand.Modified && !job.Force && pl.sess.onlyOwnKeysChanged(w.previous, content) {
		return "only knotd's own frontmatter keys changed", nil
	}
	if probs := doc.Fields.Problems; len(probs) > 0 {
		msgs := make([]string, 0, min(len(probs), maxProblemsShown)+1)
		for _, p := range probs[:min(len(probs), maxProblemsShown)] {
			msgs = append(msgs, "- "+p.Error())
		}
		if len(probs) > maxProblemsShown {
			msgs = append(msgs, fmt.Sprintf("- … and %d more", len(probs)-maxProblemsShown))
		}
		w.failure = "The note's knotd settings cannot be used, so no agent was run:\n\n" + strings.Join(msgs, "\n")
		return "", nil
	}
	if w.agentName, w.agent, err = h.ScopedAgent(doc.Fields.Agent, sc); err != nil {
		w.failure = err.Error()
		return "", nil
	}
	if doc.Fields.Model != "" {
		if err := agentrun.ValidateModel(doc.Fields.Model); err != nil {
			w.failure = fmt.Sprintf("knot_model cannot be used, so no agent was run: %v", err)
			return "", nil
		}
	}
	return "", nil
}

// decideDeleted is decide for a recorded strand that is gone: its last
// processed version's settings say whether its deletion runs.
func (pl *Pipeline) decideDeleted(w *work, job Job) (string, error) {
	h := pl.h
	doc, perr := frontmatter.Parse(w.previous)
	if perr == nil {
		w.fields = doc.Fields
		w.mode, _ = frontmatter.ResolveMode(doc.Fields) // a bad mode was reported when it was written
		if w.mode == frontmatter.ModeOff {
			return "knot_mode: off", nil
		}
		if ev := doc.Fields.Events; ev != nil && !slices.Contains(ev, "deleted") {
			return "knot_events does not include deleted", nil
		}
	}
	if ev := w.scope.Events; ev != nil && !slices.Contains(ev, "deleted") {
		return "the rules for its path do not run it on deleted", nil
	}
	if dir := path.Dir(w.rel); dir != "." {
		if _, err := h.FS().Lstat(filepath.FromSlash(dir)); errors.Is(err, fs.ErrNotExist) || vaultfs.IsNotDir(err) {
			// The strand's folder was deleted with it, and its tie-off
			// with it: a reply would have nowhere to go but a folder
			// knotd would bring back.
			return "its folder was deleted with it", nil
		}
	}
	if !job.Force {
		if sec, ok := pl.answered(w); ok {
			return "its deletion is already answered in its tie-off by run " + sec.RunID, nil
		}
	}
	if w.session == "" {
		// No run gave the strand a session, and none was recorded: the
		// agent still needs one for this last run. It is not kept, since
		// the record goes with the strand.
		w.session, w.newSession = uuid.NewString(), true
	}
	var err error
	if w.agentName, w.agent, err = h.ScopedAgent(w.fields.Agent, w.scope); err != nil {
		w.failure = err.Error()
	}
	return "", nil
}

// prepare is step 3, for a change that runs: the conversation it
// continues (knot_resume) and the strand's session, written into the
// strand where knotd writes sessions (see ensureSession, in session.go).
// A run that records a failure, or a deletion, has nothing to prepare.
func (pl *Pipeline) prepare(w *work) error {
	if w.failure != "" || w.event == strand.Deleted {
		return nil
	}
	if r := w.fields.Resume; r != "" && (r != w.previousFields().Resume || w.resume == "") {
		// knot_resume is the user's: a handle they chose, which knotd
		// follows when they set or change it (or has none of its own).
		// An old handle left in a note (knotd wrote them there once)
		// never overrides the newer one knotd keeps in its state.
		w.resume = r
	}
	w.keeps = w.agent.KeepsConversation()
	if w.fields.NewSession && !(w.previousFields().NewSession && w.rec.Session != "") {
		return pl.sess.newConversation(w)
	}
	return pl.sess.ensureSession(w, w.fields.Session)
}

// reply is what step 4, run, leaves for record: the run's tie-off
// section (masked, bounded), the conversation's resume handle and
// running totals after it, and the run's transcript.
type reply struct {
	sec    tieoff.Section
	resume string
	totals *state.Usage
	// agent identifies the agent whose conversation answered (""
	// when none did); context and window are that conversation's
	// context after the run (see state.Record).
	agent           string
	context, window int64
	log             *runLog
	// questions are the calls the run ended holding for the user.
	questions []question.Call
}

// run is step 4: it runs the agent for prepared work, recording its
// output in the run's transcript as it comes (or, when w.failure is set,
// makes the failure the section without running it). A run canceled
// because knotd is stopping returns no reply: nothing is recorded, and
// the next start catches up on the change.
func (pl *Pipeline) run(ctx context.Context, w *work, job Job) (RunReport, *reply, error) {
	h := pl.h
	runID, err := uuid.NewV7()
	if err != nil {
		return RunReport{}, nil, fmt.Errorf("vault: new run id: %w", err)
	}
	now := h.Now().UTC()
	rep := RunReport{Strand: w.rel, Event: w.event, RunID: runID.String(), Agent: w.agentName, Ran: true}
	h.Started(control.Running{Note: w.rel, RunID: rep.RunID, Agent: w.agentName, Event: w.event.String(), Started: now})
	r := &reply{sec: tieoff.Section{Event: w.event, Strand: w.rel, Time: now, RunID: rep.RunID}, resume: w.resume}
	if w.event == strand.Scheduled && job.Scheduled != nil {
		// The marker records the occurrence the run stands for, so that
		// a device that takes over neither skips nor repeats it.
		r.sec.Due = job.Scheduled.Due
	}
	r.totals = w.rec.Totals // the running totals of the conversation resume names
	if r.resume != w.rec.Resume || w.newSession {
		r.totals = nil
	} else {
		r.agent, r.context, r.window = w.rec.Agent, w.rec.ContextTokens, w.rec.ContextWindow
	}

	mask := masker(w.agent)
	r.log = pl.createRunLog(rep.RunID, w.rel, mask)
	done := false
	defer func() {
		if !done {
			r.log.close()
		}
	}()

	if w.failure != "" {
		r.log.failed(w)
		rep.Outcome, rep.Reason = agentrun.OutcomeFailed, firstLine(w.failure)
		r.sec.Failed, r.sec.Body = true, w.failure
		h.Log().Warn("note cannot be run", "strand", w.rel, "event", w.event, "run", rep.RunID, "why", rep.Reason)
	} else {
		req, err := pl.request(w, job, rep.RunID, now)
		if err != nil {
			return rep, nil, err
		}
		if !h.Dry() {
			req.Ask = h.AskFunc(w.rel, pipelineAsking(w, rep.RunID))
		}
		req.OnStart = r.log.onStart(w, &req)
		req.OnOutput = r.log.onOutput
		afs := h.NewAgentFS(w.agent)
		req.FS = afs
		h.Log().Info("run started", "strand", w.rel, "event", w.event, "agent", w.agentName, "run", rep.RunID, "fired_by", job.FiredBy, "turn", req.Turn)
		res, err := h.Runner().Run(ctx, req)
		afs.Close()
		if err != nil {
			res = agentrun.Result{Outcome: agentrun.OutcomeFailed, Reason: err.Error(), ExitCode: -1, NotStarted: err.Error()}
		}
		rep.Outcome, rep.Reason, rep.Duration, rep.Usage = res.Outcome, res.Reason, res.Duration, res.Usage
		if res.Outcome == agentrun.OutcomeCanceled && ctx.Err() != nil {
			// knotd is stopping: the change stays pending and the next
			// start catches up on it. Nothing is appended or committed.
			r.log.canceled(w, &req, res)
			h.Log().Info("run canceled; the change will be processed when knotd runs again", "strand", w.rel, "run", rep.RunID)
			rep.Ran = false
			return rep, nil, nil
		}
		r.log.finish(w, &req, res)
		if res.Resume != "" && res.Outcome == agentrun.OutcomeOK {
			// Only a turn that went through names a conversation to
			// continue: Gemini CLI prints the session of a turn that
			// failed, and that session can never be resumed.
			r.resume = res.Resume
		}
		r.questions = res.Questions
		if res.Outcome == agentrun.OutcomeOK {
			r.totals = stateUsage(res.Totals)
			r.agent, r.context, r.window = w.agent.Identity(), res.ContextTokens, res.ContextWindow
			r.sec.Body = res.Reply
		} else {
			r.sec.Failed = true
			r.sec.Body = failureBody(w, res)
		}
		h.Log().Info("run finished", "strand", w.rel, "event", w.event, "agent", w.agentName, "run", rep.RunID,
			"outcome", res.Outcome, "duration", res.Duration.Round(time.Millisecond), "reason", res.Reason)
	}

	r.sec.Body = mask.Text(r.sec.Body)
	if r.sec.Failed {
		r.sec.Body = boundFailure(r.sec.Body)
	}
	done = true
	return rep, r, nil
}

// record is step 5: it makes the run's reply durable in the order that
// survives a crash at any point: journal the section with the strand's
// new record, append the section to the tie-off, then commit the record
// and drop the journal entry in one transaction (completeRun).
func (pl *Pipeline) record(ctx context.Context, w *work, rep RunReport, r *reply) error {
	h := pl.h
	sec := r.sec
	rec := w.rec
	rec.Path = w.rel
	if w.event != strand.Deleted {
		rec.Stamp, rec.Hash = h.Stamp(w.info), w.hash
	}
	rec.Session, rec.Resume, rec.Totals = w.session, r.resume, r.totals
	rec.Agent, rec.ContextTokens, rec.ContextWindow = r.agent, r.context, r.window
	for _, h := range w.wrote {
		rec.AddWrote(h)
	}
	rec.Turns++
	rec.LastRunID, rec.Processed = rep.RunID, sec.Time
	rec.LastOutcome = state.OutcomeSucceeded
	if sec.Failed {
		rec.LastOutcome = state.OutcomeFailed
	}
	if w.failure != "" && w.fields.Session == "" {
		rec.Session = w.rec.Session // no session was written: keep what we had
	}
	// The marker records what the section answers: the strand's session
	// and the hash of the version the run saw (of the last processed one
	// for a deletion), unless its content could not be read.
	sec.Session = rec.Session
	switch {
	case w.event == strand.Deleted && w.previous != nil:
		sec.Hash = MarkerHash(w.previous)
	case w.event != strand.Deleted && w.content != nil:
		sec.Hash = w.markerHash()
	}
	content := w.content
	if w.cont != nil && !w.contCovers() {
		// The note changed beyond the answer since the turn asked: the
		// record keeps the version that turn answered, so that the
		// change runs next (a follow-up), and the marker says so too.
		rec.Stamp, rec.Hash, content = w.rec.Stamp, w.rec.Hash, w.previous
		sec.Hash = w.cont.Hash
	}
	a := pipelineAsking(w, rep.RunID)
	a.Resume, a.Hash = r.resume, sec.Hash
	j := Journal{Section: sec, Replace: w.mode == frontmatter.ModeReplace,
		Quiet: len(r.questions) > 0 && !sec.Failed && strings.TrimSpace(sec.Body) == "", Asking: &a, Questions: r.questions}
	enc, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("vault: journal run %s: %w", rec.LastRunID, err)
	}
	if pl.sess.settle(w) {
		// A save that was under way when knotd wrote the strand went
		// into the file knotd replaced and is back: the strand is not
		// the version the run saw, and its stamp must not say it is.
		rec.Stamp = state.Stamp{}
	}
	if w.unsyncedDir != "" {
		// The record below says the strand is knotd's version: make
		// the rename that put it there as durable first.
		err := h.Syncing(w.unsyncedDir)
		if err == nil {
			err = vaultfs.SyncDir(h.FS(), w.unsyncedDir)
		}
		if err != nil {
			// The agent has replied: losing the reply (and running it
			// again) for a sync that failed would be worse than the
			// risk it leaves, that a crash now undoes the write.
			h.Log().Warn("cannot sync the note's folder after writing its knot_session; a crash now may undo that write", "strand", w.rel, "err", err)
		}
	}
	p := state.Pending{RunID: rec.LastRunID, Event: w.event, Record: rec, Content: content, Journal: enc}
	continued := ""
	if w.cont != nil {
		// Journaled with the run in one transaction: the turn went on,
		// and never goes on twice, even after a crash.
		continued = w.cont.ID
	}
	if err := pl.putPending(ctx, p, continued); err != nil {
		return err
	}
	h.Journaled(p.RunID)
	return pl.completeRun(p, j, false, r.log)
}

// pipelineAsking is the run runID of w as its questions record it.
func pipelineAsking(w *work, runID string) Asking {
	a := Asking{RunID: runID, Agent: w.agentName, Resume: w.resume, Event: w.event}
	if w.content != nil && !w.tooBig && w.event != strand.Deleted {
		a.Hash = w.markerHash()
	}
	return a
}

// contCovers reports whether w's version is the one the turn it continues
// answered, but for knotd's own keys (the answer in knot_answer): the
// continuing run answers it too.
func (w *work) contCovers() bool {
	if w.content == nil || w.tooBig {
		return false
	}
	if w.cont.Hash != "" {
		return w.cont.Hash == w.markerHash()
	}
	return w.previous != nil && MarkerHash(w.previous) == w.markerHash()
}

// putPending journals the run p. The agent has replied: a journal that
// cannot be written (a full disk, too many open files) is tried again,
// with growing pauses, for as long as knotd watches (until it stops), so
// that the reply is kept and the agent is not run again for the same
// change. A pass (--once) tries a few times, then fails the run.
//
// continued, when not "", is the question whose continuing run this is:
// it is done in the same transaction.
func (pl *Pipeline) putPending(ctx context.Context, p state.Pending, continued string) error {
	h := pl.h
	deadline := h.Now().Add(commitPatience)
	for tries := 0; ; tries++ {
		pause := timing.Backoff(time.Second, tries)
		err := h.Journaling(p.RunID)
		if err == nil {
			err = h.Store().Update(func(tx *state.Tx) error {
				if err := tx.PutPending(p); err != nil || continued == "" {
					return err
				}
				return tx.DeleteQuestion(continued)
			})
		}
		if err == nil || errors.Is(err, state.ErrCorrupt) || errors.Is(err, state.ErrSessionTaken) {
			return err
		}
		if !h.Watching() && h.Now().After(deadline) {
			return err
		}
		h.Log().Warn("cannot journal a finished run; knotd keeps its reply and tries again", "strand", p.Record.Path, "run", p.RunID, "in", pause, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (knotd stopped before the run could be journaled)", err)
		case <-time.After(pause):
		}
	}
}

// commitPatience is how long a pass (--once) keeps trying to journal a
// finished run; timing.MaxPause bounds the pause between two tries.
const commitPatience = 3 * time.Second

// complete appends a journaled run's section (unless check finds it already
// in the tie-off) and commits its record. When recovering (check), a
// record that a later run of the strand committed meanwhile is kept: the
// section is appended, the journal entry dropped.
func (pl *Pipeline) complete(p state.Pending, j Journal, check bool) error {
	var tl *runLog
	if check {
		tl = pl.reopenRunLog(p.RunID, p.Record.Path)
		defer tl.close()
	}
	return pl.completeRun(p, j, check, tl)
}

// completeRun is complete, recording the section's place in the run's
// transcript tl (which may be nil).
func (pl *Pipeline) completeRun(p state.Pending, j Journal, check bool, tl *runLog) error {
	h := pl.h
	t, err := strand.TieOffPath(p.Record.Path)
	if err != nil {
		return err
	}
	done, stale := false, false
	if check {
		done, err = tieoff.HasRun(h.FS(), t, p.RunID, 0)
		if err != nil && !errors.Is(err, tieoff.ErrTorn) && !errors.Is(err, fs.ErrNotExist) && !pl.ties.unwritableErr(t, err) {
			return fmt.Errorf("vault: recover run %s: %w", p.RunID, err)
		}
		cur, has, err := h.Store().Get(p.Record.Path)
		if err != nil {
			return err
		}
		// Run ids are UUID v7: they sort by the time the run started.
		stale = has && cur.LastRunID > p.RunID
	}
	var offset int64
	var kept *ReplyKept
	switch {
	case j.Quiet:
		offset = -1 // no section to write
	case done:
		offset = pl.sectionOffset(t, p.RunID)
	default:
		err = h.Appending(p.RunID)
		switch {
		case err != nil:
		case j.Replace:
			err = tieoff.Replace(h.FS(), t, j.Section)
		default:
			offset, err = tieoff.Append(h.FS(), t, j.Section)
		}
		if err != nil && pl.ties.unwritableErr(t, err) {
			// A tie-off that can never be written as it is (see
			// unwritable.go): the reply is kept outside the vault and
			// the run is done, rather than journaled for ever.
			var kerr error
			if kept, kerr = pl.keepReply(p, j, t, err); kerr != nil {
				err = fmt.Errorf("%w; and keeping the reply in knotd's state directory failed too: %w", err, kerr)
			} else {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("vault: %s: write tie-off (the run stays journaled and is retried when knotd starts): %w", p.Record.Path, err)
		}
	}
	if kept == nil && !j.Quiet {
		tl.tieOff(t, offset, j.Replace)
	}
	if stale {
		if err := h.Store().Update(func(tx *state.Tx) error { return tx.DeletePending(p.RunID) }); err != nil {
			return err
		}
		return keptErr(kept)
	}
	if j.Asking != nil {
		// Before the run is complete: a crash now asks again at the next
		// start (the journal holds the calls), never loses them.
		if err := h.Asked(p.Record.Path, *j.Asking, j.Questions); err != nil {
			if !pl.ties.unwritableErr(t, err) {
				return fmt.Errorf("vault: %s (the run stays journaled and is completed when knotd starts): %w", p.Record.Path, err)
			}
			// A tie-off that can never be written (unwritable.go): the
			// run's reply went aside; its questions cannot be asked.
			h.Log().Error("cannot write down the agent's question: the note's tie-off cannot be written; the question is not asked", "strand", p.Record.Path, "run", p.RunID, "err", err)
		}
	}
	if err := h.Completing(p.RunID); err != nil {
		return err
	}
	if err := h.Store().Complete(p.RunID); err != nil {
		return err
	}
	h.Completed(p.RunID)
	return keptErr(kept)
}

// keptErr is kept as an error (nil when it is nil).
func keptErr(kept *ReplyKept) error {
	if kept == nil {
		return nil
	}
	return kept
}

// commitSkip records the strand's current version as processed without a
// run.
func (pl *Pipeline) commitSkip(w *work, why string) error {
	h := pl.h
	h.Log().Debug("change recorded without a run", "strand", w.rel, "event", w.event, "why", why)
	if w.event == strand.Deleted {
		return h.Store().Delete(w.rel)
	}
	if w.answer != nil {
		return pl.commitAnswered(w, *w.answer)
	}
	rec := w.rec
	rec.Path, rec.Stamp, rec.Hash = w.rel, h.Stamp(w.info), w.hash
	rec.LastOutcome, rec.Processed = state.OutcomeSkipped, h.Now().UTC()
	pl.sess.newConversationAsked(w, &rec)
	if rec.Session != "" {
		if owner, taken, err := h.Store().BySession(rec.Session); err == nil && taken && owner.Path != w.rel {
			rec.Session = ""
		}
	}
	return h.Store().Put(rec, w.content)
}
