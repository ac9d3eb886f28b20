package vault

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/vaultfs"
	"github.com/knotd/knotd/state"
	"github.com/knotd/knotd/tieoff"

	"github.com/google/uuid"
	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/frontmatter"
	"github.com/knotd/knotd/strand"
)

// Agent runs one agent invocation. agentrun.Runner satisfies it; tests may
// substitute their own.
type Agent interface {
	Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error)
}

// Job is what the scheduler hands the processor for one strand.
type Job struct {
	// FiredBy says what made knotd look at the strand.
	FiredBy agentrun.FiredBy
	// Force runs the strand even if its content is the processed one
	// (--all).
	Force bool
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
}

// Failed reports whether the run counts as failed for --once's exit
// status.
func (r RunReport) Failed() bool { return r.Ran && r.Outcome != agentrun.OutcomeOK }

// emptySkip is the reason an empty strand is not run.
const emptySkip = "the strand is empty; it runs once it has content (run_empty: true runs it now)"

// errRetry asks the processor to start over: the strand changed under it.
var errRetry = errors.New("strand changed while knotd was working on it")

// maxAttempts bounds how often process starts over because the user kept
// saving while knotd wrote the strand's frontmatter.
const maxAttempts = 5

// process handles one settled change of the strand at rel: it decides the
// event from the disk and the store, runs the agent, appends the tie-off
// section (a failure section when the run failed), commits the new state,
// and finally reports whether the strand moved on during the run (then the
// caller schedules a follow-up).
func (v *Vault) process(ctx context.Context, rel string, job Job) (rep RunReport, again bool, err error) {
	v.claims.claim(rel)
	defer v.claims.release(rel)
	defer v.sessions.release(rel)
	if err := v.finishJournaled(rel); err != nil {
		return rep, false, err
	}
	if !v.dry {
		v.mergeCopies(rel)
		v.foldNoteCopies(rel)
	}
	for attempt := 1; ; attempt++ {
		rep, err = v.processOnce(ctx, rel, job, attempt == maxAttempts)
		if !errors.Is(err, errRetry) || attempt == maxAttempts {
			break
		}
	}
	if err != nil || !rep.Ran {
		return rep, false, err
	}
	again, err = v.movedOn(rel)
	return rep, again, err
}

// finishJournaled finishes the runs of the strand at rel that are still
// journaled because their tie-off or state write failed (a full disk)
// since knotd started: their replies are appended once, before anything
// decides whether the strand needs another run. An error leaves them
// journaled and keeps the strand from running again meanwhile.
func (v *Vault) finishJournaled(rel string) error {
	if v.dry {
		return nil
	}
	ps, err := v.store.Pendings()
	if err != nil {
		return err
	}
	for _, p := range ps {
		if p.Record.Path != rel {
			continue
		}
		j, err := decodeJournal(p.Section)
		if err == nil {
			err = v.complete(p, j, true)
		}
		if err != nil {
			return fmt.Errorf("vault: %s: finish journaled run %s: %w", rel, p.RunID, err)
		}
		v.log.Info("finished a run that was journaled after a failed write", "strand", rel, "run", p.RunID)
	}
	return nil
}

// movedOn reports whether the strand at rel differs from what was last
// processed: the user saved it again during the run.
func (v *Vault) movedOn(rel string) (bool, error) {
	rec, has, err := v.store.Get(rel)
	if err != nil {
		return false, err
	}
	info, where, err := v.lstatStrand(rel)
	if err != nil {
		return false, err
	}
	switch {
	case where == ignored:
		return false, nil
	case where == absent:
		return has, nil
	case !has:
		return true, nil
	case state.StampOf(info) == rec.Stamp:
		return false, nil
	}
	same, err := v.sameContent(rel, rec.Hash)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return false, nil // unreadable: it was just reported; a save makes it run
	case err != nil:
		return false, err // never a follow-up for a strand that cannot be looked at
	}
	return !same, nil
}

// work is one run being prepared: what processOnce learned so far.
type work struct {
	rel, abs string
	event    strand.EventType
	rec      state.Record
	has      bool
	// content is the strand as the agent sees it (after knotd wrote its
	// session); previous is the last processed content.
	content, previous []byte
	// hash is the hash of the strand's version being processed: of
	// content, or of the whole file when it is too big to be read.
	hash state.Hash
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
}

func (v *Vault) processOnce(ctx context.Context, rel string, job Job, last bool) (RunReport, error) {
	rep := RunReport{Strand: rel}
	w, skip, err := v.prepare(rel, job, last)
	defer v.settle(w)
	if err != nil || w == nil {
		rep.Skipped = skip
		return rep, err
	}
	rep.Event = w.event
	if skip != "" {
		rep.Skipped = skip
		return rep, v.commitSkip(w, skip)
	}
	return v.run(ctx, w, job)
}

// prepare reads the strand and its record and decides what to do. It
// returns nil work when there is nothing to do, a skip reason when the
// change is recorded without a run, and errRetry when the strand changed
// while knotd wrote its frontmatter.
func (v *Vault) prepare(rel string, job Job, last bool) (*work, string, error) {
	abs, err := strand.Abs(v.root, rel)
	if err != nil {
		return nil, "", err
	}
	w := &work{rel: rel, abs: abs, lastAttempt: last}
	w.rec, w.has, err = v.store.Get(rel)
	if err != nil {
		return nil, "", err
	}
	linfo, where, err := v.lstatStrand(rel)
	if err != nil {
		return nil, "", fmt.Errorf("vault: %s: %w", rel, err)
	}
	switch {
	case where == ignored:
		return nil, "ignored", nil
	case where == absent && !w.has:
		return nil, "", nil
	case where == absent:
		return v.prepareDeleted(w, job)
	}

	content, hash, info, tooBig, err := v.readStrand(rel, v.cfg.MaxStrandSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", errRetry // deleted between the look and the read
	}
	if errors.Is(err, fs.ErrPermission) {
		// Recorded with its stamp, so that it fails once, not at every
		// pass; the next save after the user fixed it runs it.
		w.event = strand.Created
		if w.has {
			w.event = strand.Modified
		}
		w.info, w.session, w.resume = linfo, w.rec.Session, w.rec.Resume
		w.failure = fmt.Sprintf("knotd may not read the strand (%v), so no agent was run. Make it readable and save it again.", err)
		return w, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("vault: read %s: %w", rel, err)
	}
	if w.has && hash == w.rec.Hash && !job.Force {
		// Nothing new (a touch, or already processed): remember the stamp.
		if st := v.stamp(info); !v.dry && st != w.rec.Stamp {
			return nil, "", v.store.Update(func(tx *state.Tx) error { return tx.Restamp(rel, st) })
		}
		return nil, "", nil
	}
	w.event = strand.Created
	if w.has {
		w.event = strand.Modified
	}
	w.info, w.content, w.userContent, w.hash = info, content, content, hash
	if w.has {
		if w.previous, _, err = v.store.Content(rel); err != nil {
			return nil, "", err
		}
	}
	w.session, w.resume = w.rec.Session, w.rec.Resume
	if !tooBig && !job.Force {
		if sec, ok := v.answered(w); ok {
			w.answer = &sec
			return w, "already answered in its tie-off by run " + sec.RunID, nil
		}
	}
	if !w.has && v.answeredBefore(w) {
		// New to this device's state, but its tie-off answered an earlier
		// version of it (on another device, or before the state was
		// lost): a change of an old note, whose earlier version knotd
		// does not have.
		w.event = strand.Modified
	}

	switch {
	case tooBig:
		w.failure = fmt.Sprintf("The strand is %s, more than knotd's limit of %s, so no agent was run. Make it smaller, add it to .knotignore, or raise limits.max_strand_size in the configuration.",
			byteSize(info.Size()), byteSize(v.cfg.MaxStrandSize))
		w.content = nil
		return w, "", nil
	case bytes.IndexByte(content, 0) >= 0:
		w.failure = "The strand contains NUL bytes: it looks like a binary file named .md, so no agent was run. Rename it, or add it to .knotignore."
		return w, "", nil
	case !utf8.Valid(content):
		w.failure = "The strand is not valid UTF-8 text, so no agent was run. Save it as UTF-8 in your editor."
		return w, "", nil
	case !v.cfg.RunEmpty && len(bytes.TrimSpace(frontmatter.WithoutOwnKeys(content))) == 0:
		// A note being created (Obsidian's Untitled.md, a touch) or
		// emptied: nothing to answer, and nothing is written into it
		// while the user is still naming it. It runs once it has
		// content, as Created if knotd never ran it.
		if !w.has {
			return nil, emptySkip, nil
		}
		return w, emptySkip, nil
	}

	doc, err := frontmatter.Parse(content)
	if err != nil {
		w.failure = fmt.Sprintf("The strand's frontmatter cannot be read, so no agent was run: %v", err)
		return w, "", nil
	}
	w.fields = doc.Fields
	if w.mode, err = frontmatter.ResolveMode(doc.Fields); err != nil {
		w.failure = fmt.Sprintf("%v. No agent was run.", err)
		return w, "", nil
	}
	if w.mode == frontmatter.ModeOff {
		return w, "knot_mode: off", nil
	}
	if ev := doc.Fields.Events; ev != nil && !slices.Contains(ev, strings.ToLower(w.event.String())) {
		return w, "knot_events does not include " + strings.ToLower(w.event.String()), nil
	}
	if w.event == strand.Modified && !job.Force && v.onlyOwnKeysChanged(w.previous, content) {
		return w, "only knotd's own frontmatter keys changed", nil
	}
	if probs := doc.Fields.Problems; len(probs) > 0 {
		msgs := make([]string, 0, min(len(probs), maxProblemsShown)+1)
		for _, p := range probs[:min(len(probs), maxProblemsShown)] {
			msgs = append(msgs, "- "+p.Error())
		}
		if len(probs) > maxProblemsShown {
			msgs = append(msgs, fmt.Sprintf("- … and %d more", len(probs)-maxProblemsShown))
		}
		w.failure = "The strand's knotd settings cannot be used, so no agent was run:\n\n" + strings.Join(msgs, "\n")
		return w, "", nil
	}
	if w.agentName, w.agent, err = v.agentFor(doc.Fields.Agent); err != nil {
		w.failure = err.Error()
		return w, "", nil
	}
	if doc.Fields.Model != "" {
		if err := agentrun.ValidateModel(doc.Fields.Model); err != nil {
			w.failure = fmt.Sprintf("knot_model cannot be used, so no agent was run: %v", err)
			return w, "", nil
		}
	}
	if r := doc.Fields.Resume; r != "" && (r != w.previousFields().Resume || w.resume == "") {
		// knot_resume is the user's: a handle they chose, which knotd
		// follows when they set or change it (or has none of its own).
		// An old handle left in a note (knotd wrote them there once)
		// never overrides the newer one knotd keeps in its state.
		w.resume = r
	}
	w.keeps = w.agent.KeepsConversation()
	if doc.Fields.NewSession && !(w.previousFields().NewSession && w.rec.Session != "") {
		return w, "", v.newConversation(w)
	}
	return w, "", v.ensureSession(w, doc.Fields.Session)
}

// previousFields returns the knotd keys of the strand's last processed
// version (zero when there is none, or they cannot be read).
func (w *work) previousFields() frontmatter.Fields {
	if w.previous == nil {
		return frontmatter.Fields{}
	}
	doc, err := frontmatter.Parse(w.previous)
	if err != nil {
		return frontmatter.Fields{}
	}
	return doc.Fields
}

// writesSession reports whether knotd writes the strand's knot_session
// into it: for an agent that keeps a conversation, unless the user keeps
// knotd out of notes (write_session: false).
func (v *Vault) writesSession(w *work) bool {
	return w.keeps && !v.cfg.NoSessionWrites
}

// newConversation gives the strand, whose knot_session is "new", a new
// session: the conversation starts afresh, without a resume handle. The
// new session replaces "new" in the strand where knotd writes sessions;
// elsewhere the state keeps it, and the "new" left in the strand asks
// for nothing more until it is written again.
func (v *Vault) newConversation(w *work) error {
	id := uuid.NewString()
	v.log.Info("strand asks for a new conversation (knot_session: new); giving it a new session", "strand", w.rel, "session", id, "was", w.rec.Session)
	if !v.sessions.claim(id, w.rel) {
		return fmt.Errorf("vault: a new session %s is taken", id) // a UUID collision: never
	}
	if v.writesSession(w) {
		updated, err := frontmatter.SetSession(w.content, id)
		if err != nil {
			return err
		}
		if err := v.writeStrand(w, updated); err != nil {
			return err
		}
	}
	w.session, w.newSession, w.resume = id, true, ""
	w.fields.Session, w.fields.Resume = id, ""
	return nil
}

// prepareDeleted sets up the Deleted run of a recorded strand that is gone.
func (v *Vault) prepareDeleted(w *work, job Job) (*work, string, error) {
	w.event = strand.Deleted
	var err error
	if w.previous, _, err = v.store.Content(w.rel); err != nil {
		return nil, "", err
	}
	w.hash = w.rec.Hash
	doc, perr := frontmatter.Parse(w.previous)
	if perr == nil {
		w.fields = doc.Fields
		w.mode, _ = frontmatter.ResolveMode(doc.Fields) // a bad mode was reported when it was written
		if w.mode == frontmatter.ModeOff {
			return w, "knot_mode: off", nil
		}
		if ev := doc.Fields.Events; ev != nil && !slices.Contains(ev, "deleted") {
			return w, "knot_events does not include deleted", nil
		}
	}
	if dir := path.Dir(w.rel); dir != "." {
		if _, err := v.fs.Lstat(filepath.FromSlash(dir)); errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			// The strand's folder was deleted with it, and its tie-off
			// with it: a reply would have nowhere to go but a folder
			// knotd would bring back.
			return w, "its folder was deleted with it", nil
		}
	}
	if !job.Force {
		if sec, ok := v.answered(w); ok {
			return w, "its deletion is already answered in its tie-off by run " + sec.RunID, nil
		}
	}
	w.session, w.resume = w.rec.Session, w.rec.Resume
	if w.session == "" {
		// No run gave the strand a session, and none was recorded: the
		// agent still needs one for this last run. It is not kept, since
		// the record goes with the strand.
		w.session, w.newSession = uuid.NewString(), true
	}
	if w.agentName, w.agent, err = v.agentFor(w.fields.Agent); err != nil {
		w.failure = err.Error()
	}
	return w, "", nil
}

// ensureSession decides the strand's session before its run, and writes
// it into the strand where knotd writes sessions and the strand does not
// hold it yet, without clobbering an edit of the user's. In order:
//
//   - the strand's own knot_session (have), unless another strand holds
//     it: then this one is a copy (of a template, say) and gets a session
//     of its own, or its original moved here and its history follows;
//   - the session knotd recorded for the strand (it lost its key: a save
//     that dropped it, a sync that picked an older copy, git checkout);
//   - the session its tie-off's markers record, on a device that has no
//     record of the strand;
//   - a new one.
//
// A session is claimed for the strand until its run is committed, so
// that notes copied from one template, run at once, each get their own.
func (v *Vault) ensureSession(w *work, have string) error {
	if have != "" {
		owner, taken, err := v.store.BySession(have)
		if err != nil {
			return err
		}
		if (!taken || owner.Path == w.rel) && v.sessions.claim(have, w.rel) {
			w.session, w.newSession = have, w.rec.Session != have
			return nil
		}
		if taken && owner.Path != w.rel {
			if _, where, err := v.lstatStrand(owner.Path); err == nil && where == absent && !w.has && !v.dry {
				// The owner is gone: the strand moved (or was copied, and
				// the original deleted) and no reconcile paired the two
				// paths yet. Move the history here and start over with
				// it, unless the owner is being processed right now (its
				// Deleted run): then this is a copy like any other.
				moved, err := v.move(owner.Path, w.rel, true)
				if err != nil {
					return err
				}
				if moved {
					return errRetry
				}
			}
		}
		// A copy: its conversation is its own, and the original's resume
		// handle is not its to continue.
		w.resume = w.rec.Resume
		if id := w.rec.Session; id != "" && id != have && v.ownSession(w, id) {
			// It got its own session before (knotd writes none into
			// it, or the write did not happen): it keeps that one.
			w.session, w.newSession = id, false
			return v.giveSession(w, id, "strand is a copy of another strand; it keeps the session of its own it was given")
		}
		id := uuid.NewString()
		if !v.sessions.claim(id, w.rel) {
			return fmt.Errorf("vault: a new session %s is taken", id) // a UUID collision: never
		}
		v.log.Info("strand is a copy of another strand; giving it a session of its own", "strand", w.rel, "original", owner.Path)
		w.session, w.newSession, w.resume = id, true, ""
		return v.giveSession(w, id, "")
	}
	if id := w.rec.Session; id != "" && v.ownSession(w, id) {
		w.session, w.newSession = id, false
		return v.giveSession(w, id, "strand lost its knot_session; giving it back its recorded session")
	}
	if !w.has {
		if id := v.markerSessionOf(w); id != "" && v.ownSession(w, id) {
			w.session, w.newSession = id, false
			return v.giveSession(w, id, "strand has no knot_session; its tie-off names its session")
		}
	}
	id := uuid.NewString()
	if !v.sessions.claim(id, w.rel) {
		return fmt.Errorf("vault: a new session %s is taken", id) // a UUID collision: never
	}
	w.session, w.newSession = id, true
	return v.giveSession(w, id, "")
}

// ownSession reports whether the strand may have the session id: no other
// recorded strand holds it, and no other strand's run has claimed it. It
// claims id for the strand.
func (v *Vault) ownSession(w *work, id string) bool {
	owner, taken, err := v.store.BySession(id)
	if err != nil || (taken && owner.Path != w.rel) {
		return false
	}
	return v.sessions.claim(id, w.rel)
}

// giveSession writes the strand's session id into it where knotd writes
// sessions (saying why, when why is set); elsewhere the state keeps it.
func (v *Vault) giveSession(w *work, id, why string) error {
	w.fields.Session = id
	if !v.writesSession(w) {
		return nil
	}
	updated, err := frontmatter.SetSession(w.content, id)
	if err != nil {
		// A frontmatter block knotd cannot edit without risk: the note
		// is left as it is, and its session lives in the state and the
		// tie-off's markers, as with write_session: false.
		v.warnOnce(w.rel, "knotd cannot write knot_session into this note's frontmatter, so it leaves the note as it is; the conversation goes on from knotd's state", "err", err)
		return nil
	}
	if why != "" {
		v.log.Info(why, "strand", w.rel, "session", id)
	}
	return v.writeStrand(w, updated)
}

// markerSessionOf returns the session the newest answer in the strand's
// tie-off records, "" when there is none knotd can use.
func (v *Vault) markerSessionOf(w *work) string {
	v.loadTail(w)
	if w.tail == nil {
		return ""
	}
	sec, ok, err := v.newestAnswer(w.rel, w.tail)
	if err != nil || !ok {
		return ""
	}
	return markerSession(sec)
}

// writeStrand replaces the strand's content with updated, unless the user
// saved it since it was read (then errRetry: start over from the disk).
// With --dry-run nothing is written: the run is shown as it would be.
func (v *Vault) writeStrand(w *work, updated []byte) error {
	if v.dry {
		w.content, w.hash = updated, state.HashOf(updated)
		return nil
	}
	v.settle(w) // an earlier write's, if any
	g, err := frontmatter.WriteFileDeferred(v.fs, w.rel, w.content, updated)
	w.guard = g
	if errors.Is(err, frontmatter.ErrChanged) || errors.Is(err, fs.ErrNotExist) {
		if w.lastAttempt {
			// The user keeps saving (or keeps the strand open for
			// writing): the run goes on without knotd's write, and the
			// state keeps the session.
			v.log.Info("the strand kept changing while knotd wrote its knot_session; it runs without it, and knotd keeps the session in its state", "strand", w.rel)
			return nil
		}
		return errRetry
	}
	if err != nil {
		return fmt.Errorf("vault: write frontmatter of %s: %w", w.rel, err)
	}
	info, ok, err := v.statWritten(w.rel, updated)
	if err != nil || !ok {
		return errRetry // the user saved right after knotd: start over
	}
	w.content, w.info, w.hash = updated, info, state.HashOf(updated)
	w.unsyncedDir = path.Dir(w.rel)
	return nil
}

// settle ends the watch over knotd's last write of the strand (see
// vaultfs.Guard), once any save that was under way at that write must be
// over: before the run's record is committed. It reports whether such a
// save went into the file knotd replaced (it is put back, and the strand
// no longer holds what knotd wrote), or whether that cannot be known.
// A save that could not be put back without losing a newer one is kept
// in the state directory, and said.
func (v *Vault) settle(w *work) bool {
	if w == nil || w.guard == nil {
		return false
	}
	g := w.guard
	w.guard = nil
	return v.settleGuard(w.rel, g)
}

// settleGuard settles g, the guard of a write of the strand rel: a save
// that went into the file the write replaced is put back, or kept in the
// rescued folder and said. It reports whether the strand holds more than
// what knotd wrote (or that is not known).
func (v *Vault) settleGuard(rel string, g *vaultfs.Guard) bool {
	changed, err := g.Settle()
	if err == nil {
		return changed
	}
	var late *vaultfs.LateSave
	if errors.As(err, &late) {
		if where, rerr := v.rescue(rel, late.Content); rerr != nil {
			v.log.Error("a save of the strand went into the file knotd had just replaced, and knotd cannot keep it", "strand", rel, "err", rerr)
		} else {
			v.log.Warn("a save of the strand went into the file knotd had just replaced, and the strand holds a newer save now: the earlier one is kept here", "strand", rel, "kept", where)
		}
	} else {
		v.log.Warn("cannot look for a save that went into the file knotd replaced while writing the strand", "strand", rel, "err", err)
	}
	return true
}

// rescue keeps content, a save of the strand rel that could not go back
// into the vault, in the state directory's rescued folder (0600), and
// returns its path.
func (v *Vault) rescue(rel string, content []byte) (string, error) {
	base := v.folder.Dir
	if base == "" {
		home, err := statedir.Home()
		if err != nil {
			return "", err
		}
		base = home
	}
	dir := filepath.Join(base, "rescued")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	name := v.now().UTC().Format("20060102T150405.000000000Z") + "-" + strings.NewReplacer("/", "%2F", "\\", "%5C").Replace(rel)
	if len(name) > 200 {
		name = name[:200]
	}
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return p, err
}

// statWritten returns the stat of the strand at rel if it holds exactly
// want, which knotd just wrote: the stat is taken before the read, so a
// save of the user's in between shows as different content (ok false),
// never as knotd's version with the user's stamp.
func (v *Vault) statWritten(rel string, want []byte) (os.FileInfo, bool, error) {
	got, _, info, tooBig, err := v.readStrand(rel, max(v.cfg.MaxStrandSize, int64(len(want))))
	if err != nil {
		return nil, false, err
	}
	return info, !tooBig && bytes.Equal(got, want), nil
}

// onlyOwnKeysChanged reports whether before and after differ only in
// knotd's own keys: knot_session added, changed, removed or moved (with
// the empty frontmatter block knotd created for it), or a knot_resume
// removed (knotd wrote handles into notes once). knotd's own write, a
// sync tool carrying it, git discarding it: none is a change to run on. A
// knot_resume set to a new handle is the user's choice of a conversation,
// and runs.
func (v *Vault) onlyOwnKeysChanged(before, after []byte) bool {
	if before == nil {
		return false
	}
	if !bytes.Equal(frontmatter.WithoutOwnKeys(before), frontmatter.WithoutOwnKeys(after)) {
		return false
	}
	a, errA := frontmatter.Parse(after)
	b, errB := frontmatter.Parse(before)
	return errA == nil && errB == nil && (a.Fields.Resume == "" || a.Fields.Resume == b.Fields.Resume)
}

// commitSkip records the strand's current version as processed without a
// run.
func (v *Vault) commitSkip(w *work, why string) error {
	v.log.Debug("change recorded without a run", "strand", w.rel, "event", w.event, "why", why)
	if w.event == strand.Deleted {
		return v.store.Delete(w.rel)
	}
	if w.answer != nil {
		return v.commitAnswered(w, *w.answer)
	}
	rec := w.rec
	rec.Path, rec.Stamp, rec.Hash = w.rel, v.stamp(w.info), w.hash
	rec.LastOutcome, rec.Processed = state.OutcomeSkipped, v.now().UTC()
	v.newConversationAsked(w, &rec)
	if rec.Session != "" {
		if owner, taken, err := v.store.BySession(rec.Session); err == nil && taken && owner.Path != w.rel {
			rec.Session = ""
		}
	}
	return v.store.Put(rec, w.content)
}

// newConversationAsked starts a new conversation in rec when the strand's
// version recorded without a run newly asks for one (knot_session: new,
// set by the user or by knotd reset, with no other change): the request
// is kept in the state, and the next run starts afresh.
func (v *Vault) newConversationAsked(w *work, rec *state.Record) {
	if w.content == nil {
		return
	}
	doc, err := frontmatter.Parse(w.content)
	if err != nil || !doc.Fields.NewSession || w.previousFields().NewSession {
		return
	}
	rec.Session, rec.Resume, rec.Totals = uuid.NewString(), "", nil
	v.log.Info("strand asks for a new conversation (knot_session: new); its next run starts one", "strand", w.rel, "session", rec.Session, "was", w.rec.Session)
}

// maxProblemsShown bounds how many of a strand's settings problems its
// failure section lists.
const maxProblemsShown = 20

// maxFailureBytes bounds the body of a failure section, whatever the
// strand, its settings or the agent's messages: a short explanation and a
// bounded excerpt, never the strand's bulk.
const maxFailureBytes = 16 << 10

// boundFailure cuts a failure section's body to maxFailureBytes at a line
// break, saying how much it left out.
func boundFailure(body string) string {
	if len(body) <= maxFailureBytes {
		return body
	}
	cut := maxFailureBytes
	for cut > 0 && !utf8.RuneStart(body[cut]) {
		cut--
	}
	if i := strings.LastIndexByte(body[:cut], '\n'); i > maxFailureBytes/2 {
		cut = i + 1
	}
	return body[:cut] + fmt.Sprintf("\n[… %s of this explanation left out …]\n", byteSize(int64(len(body)-cut)))
}

// byteSize formats n bytes for people.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
