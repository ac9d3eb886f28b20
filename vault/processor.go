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
	if err := v.finishJournaled(rel); err != nil {
		return rep, false, err
	}
	if !v.dry {
		v.mergeCopies(rel)
	}
	for attempt := 1; ; attempt++ {
		rep, err = v.processOnce(ctx, rel, job)
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

func (v *Vault) processOnce(ctx context.Context, rel string, job Job) (RunReport, error) {
	rep := RunReport{Strand: rel}
	w, skip, err := v.prepare(rel, job)
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
func (v *Vault) prepare(rel string, job Job) (*work, string, error) {
	abs, err := strand.Abs(v.root, rel)
	if err != nil {
		return nil, "", err
	}
	w := &work{rel: rel, abs: abs}
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
	if doc.Fields.Resume != "" {
		w.resume = doc.Fields.Resume
	}
	if doc.Fields.NewSession {
		return w, "", v.newConversation(w)
	}
	return w, "", v.ensureSession(w, doc.Fields.Session)
}

// newConversation gives the strand, whose knot_session is "new", a new
// session: the conversation starts afresh, its resume handle dropped.
func (v *Vault) newConversation(w *work) error {
	id := uuid.NewString()
	updated, err := frontmatter.MergeFields(w.content, map[string]any{frontmatter.KeySession: id, frontmatter.KeyResume: nil})
	if err != nil {
		return err
	}
	v.log.Info("strand asks for a new conversation (knot_session: new); giving it a new session", "strand", w.rel, "session", id, "was", w.rec.Session)
	if err := v.writeStrand(w, updated); err != nil {
		return err
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

// ensureSession gives the strand its knot_session before its first run,
// writing the frontmatter without clobbering a newer edit of the user's. A
// session that another recorded strand holds (the note was copied) is
// replaced by a new one.
func (v *Vault) ensureSession(w *work, have string) error {
	if have != "" {
		owner, taken, err := v.store.BySession(have)
		if err != nil {
			return err
		}
		if !taken || owner.Path == w.rel {
			w.session, w.newSession = have, w.rec.Session != have
			return nil
		}
		if _, where, err := v.lstatStrand(owner.Path); err == nil && where == absent && !w.has && !v.dry {
			// The owner is gone: the strand moved (or was copied, and the
			// original deleted) and no reconcile paired the two paths
			// yet. Move the history here and start over with it, unless
			// the owner is being processed right now (its Deleted run):
			// then this is a copy like any other.
			moved, err := v.move(owner.Path, w.rel, true)
			if err != nil {
				return err
			}
			if moved {
				return errRetry
			}
		}
		v.log.Info("strand is a copy of another strand; giving it a session of its own", "strand", w.rel, "original", owner.Path)
		// The copy's conversation is its own too: the original's resume
		// handle goes.
		id := uuid.NewString()
		updated, err := frontmatter.MergeFields(w.content, map[string]any{frontmatter.KeySession: id, frontmatter.KeyResume: nil})
		if err != nil {
			return err
		}
		if err := v.writeStrand(w, updated); err != nil {
			return err
		}
		w.session, w.newSession, w.resume = id, true, ""
		w.fields.Session, w.fields.Resume = id, ""
		return nil
	}
	if id := w.rec.Session; id != "" {
		// The strand lost its knot_session (a save that dropped it, a sync
		// that picked an older copy), but knotd recorded it (or read it
		// from the tie-off's markers): the conversation goes on, and the
		// strand gets its session back.
		updated, err := frontmatter.SetSession(w.content, id)
		if err != nil {
			return err // the frontmatter cannot be edited: said as the run's failure
		}
		w.session, w.newSession = id, false
		w.fields.Session = id
		v.log.Info("strand lost its knot_session; giving it back its recorded session", "strand", w.rel, "session", id)
		return v.writeStrand(w, updated)
	}
	updated, id, changed, err := frontmatter.EnsureSession(w.content)
	if err != nil {
		return err
	}
	w.session, w.newSession = id, true
	if changed {
		return v.writeStrand(w, updated)
	}
	return nil
}

// writeStrand replaces the strand's content with updated, unless the user
// saved it since it was read (then errRetry: start over from the disk).
// With --dry-run nothing is written: the run is shown as it would be.
func (v *Vault) writeStrand(w *work, updated []byte) error {
	if v.dry {
		w.content, w.hash = updated, state.HashOf(updated)
		return nil
	}
	err := frontmatter.WriteFileDeferred(v.fs, w.rel, w.content, updated)
	if errors.Is(err, frontmatter.ErrChanged) || errors.Is(err, fs.ErrNotExist) {
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
// knotd's own bookkeeping keys (knot_session, knot_resume): knotd's own
// write, or a sync tool carrying it, is not a change to run on.
func (v *Vault) onlyOwnKeysChanged(before, after []byte) bool {
	if before == nil {
		return false
	}
	strip := func(b []byte) ([]byte, bool) {
		out, err := frontmatter.MergeFields(b, map[string]any{"knot_session": nil, "knot_resume": nil})
		return out, err == nil
	}
	a, ok1 := strip(before)
	b, ok2 := strip(after)
	return ok1 && ok2 && bytes.Equal(a, b)
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
	if rec.Session != "" {
		if owner, taken, err := v.store.BySession(rec.Session); err == nil && taken && owner.Path != w.rel {
			rec.Session = ""
		}
	}
	return v.store.Put(rec, w.content)
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
