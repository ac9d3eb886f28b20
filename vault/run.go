package vault

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/vaultfs"
	"github.com/knotd/knotd/state"

	"github.com/google/uuid"
	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/frontmatter"
	"github.com/knotd/knotd/strand"
	"github.com/knotd/knotd/tieoff"
)

// run runs the agent for prepared work (or, when w.failure is set, records
// the failure without running it), then journals, appends and commits.
func (v *Vault) run(ctx context.Context, w *work, job Job) (RunReport, error) {
	runID, err := uuid.NewV7()
	if err != nil {
		return RunReport{}, fmt.Errorf("vault: new run id: %w", err)
	}
	now := v.now().UTC()
	rep := RunReport{Strand: w.rel, Event: w.event, RunID: runID.String(), Agent: w.agentName, Ran: true}
	sec := tieoff.Section{Event: w.event, Strand: w.rel, Time: now, RunID: rep.RunID}
	resume := w.resume
	totals := w.rec.Totals // the running totals of the conversation resume names
	if resume != w.rec.Resume || w.newSession {
		totals = nil
	}

	mask := masker(w.agent)
	tl := v.createRunLog(rep.RunID, w.rel, mask)
	defer tl.close()

	if w.failure != "" {
		tl.failed(w)
		rep.Outcome, rep.Reason = agentrun.OutcomeFailed, firstLine(w.failure)
		sec.Failed, sec.Body = true, w.failure
		v.log.Warn("strand cannot be run", "strand", w.rel, "event", w.event, "run", rep.RunID, "why", rep.Reason)
	} else {
		req, err := v.request(w, job, rep.RunID, now)
		if err != nil {
			return rep, err
		}
		req.OnStart = tl.onStart(w, &req)
		req.OnOutput = tl.onOutput
		v.log.Info("run started", "strand", w.rel, "event", w.event, "agent", w.agentName, "run", rep.RunID, "fired_by", job.FiredBy, "turn", req.Turn)
		res, err := v.agent.Run(ctx, req)
		if err != nil {
			res = agentrun.Result{Outcome: agentrun.OutcomeFailed, Reason: err.Error(), ExitCode: -1}
		}
		rep.Outcome, rep.Reason, rep.Duration = res.Outcome, res.Reason, res.Duration
		if res.Outcome == agentrun.OutcomeCanceled && ctx.Err() != nil {
			// knotd is stopping: the change stays pending and the next
			// start catches up on it. Nothing is appended or committed.
			tl.canceled(w, &req, res)
			v.log.Info("run canceled; the change will be processed when knotd runs again", "strand", w.rel, "run", rep.RunID)
			rep.Ran = false
			return rep, nil
		}
		tl.finish(w, &req, res)
		if res.Resume != "" && res.Outcome == agentrun.OutcomeOK {
			// Only a turn that went through names a conversation to
			// continue: Gemini CLI prints the session of a turn that
			// failed, and that session can never be resumed.
			resume = res.Resume
		}
		if res.Outcome == agentrun.OutcomeOK {
			totals = stateUsage(res.Totals)
		}
		if res.Outcome == agentrun.OutcomeOK {
			sec.Body = res.Reply
		} else {
			sec.Failed = true
			sec.Body = failureBody(w, res)
		}
		v.log.Info("run finished", "strand", w.rel, "event", w.event, "agent", w.agentName, "run", rep.RunID,
			"outcome", res.Outcome, "duration", res.Duration.Round(time.Millisecond), "reason", res.Reason)
	}

	sec.Body = mask.Text(sec.Body)
	if sec.Failed {
		sec.Body = boundFailure(sec.Body)
	}

	rec := w.rec
	rec.Path = w.rel
	if w.event != strand.Deleted {
		rec.Stamp, rec.Hash = v.stamp(w.info), w.hash
	}
	rec.Session, rec.Resume, rec.Totals = w.session, resume, totals
	rec.Turns++
	rec.LastRunID, rec.Processed = rep.RunID, now
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
		sec.Hash = markerHash(w.previous)
	case w.event != strand.Deleted && w.content != nil:
		sec.Hash = w.markerHash()
	}
	j := journal{Section: sec, Replace: w.mode == frontmatter.ModeReplace}
	if err := v.commit(ctx, w, rec, j, tl); err != nil {
		return rep, err
	}
	return rep, nil
}

// stateUsage is u as the state records it.
func stateUsage(u *agentrun.Usage) *state.Usage {
	if u == nil {
		return nil
	}
	return &state.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD}
}

// request builds the agent request for w.
func (v *Vault) request(w *work, job Job, runID string, now time.Time) (agentrun.Request, error) {
	req := agentrun.Request{
		RunID:    runID,
		Vault:    v.root,
		StateDir: v.folder.Dir,
		Event:    strand.Event{Type: w.event, Strand: strand.Strand{Path: w.rel, Abs: w.abs, Content: w.content}, Time: now},
		Previous: w.previous,
		Session:  w.session,
		Resume:   w.resume,
		Turn:     w.rec.Turns + 1,
		FiredBy:  job.FiredBy,
		Agent:    w.agent,
		Model:    w.fields.Model,
		Now:      now,
	}
	if w.newSession {
		req.Resume = ""
	}
	if t := w.rec.Totals; t != nil && req.Resume != "" && req.Resume == w.rec.Resume {
		req.TotalsBefore = &agentrun.Usage{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens,
			CacheReadTokens: t.CacheReadTokens, CacheWriteTokens: t.CacheWriteTokens, CostUSD: t.CostUSD}
	}
	if w.event == strand.Modified && w.previous != nil && !bytes.Equal(w.content, w.userContent) {
		// knotd wrote the session into the strand for this run: diff
		// against the previous version with the same edit, so that the
		// Changes show what the user changed, not knotd's key.
		if prev, err := frontmatter.SetSession(w.previous, w.session); err == nil {
			req.Previous = prev
		}
	}
	v.loadTail(w)
	win := w.tail
	if w.tailErr != nil {
		v.log.Warn("cannot read the tie-off's newest sections; the prompt goes without them", "strand", w.rel, "err", w.tailErr)
	}
	if win != nil {
		req.TieOff = sectionTexts(*win)
		if win.Start > 0 {
			// Turns counts the sections knotd appended; the exact count
			// of older sections would cost a read of the whole history.
			req.TieOffOmitted = max(1, w.rec.Turns-len(req.TieOff))
		}
	}
	return req, nil
}

// readTail reads the newest sections of the strand's tie-off, as many as
// a prompt shows and a little more (agentrun bounds them again and marks
// what it leaves out); nil when there is no tie-off.
func (v *Vault) readTail(rel string) (*tieoff.Window, error) {
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return nil, err
	}
	lim := v.cfg.Limits
	def := agentrun.DefaultLimits()
	if lim.TieOffSections <= 0 {
		lim.TieOffSections = def.TieOffSections
	}
	if lim.TieOffBytes <= 0 {
		lim.TieOffBytes = def.TieOffBytes
	}
	win, err := tieoff.Tail(v.fs, t, lim.TieOffSections, 2*lim.TieOffBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &win, nil
}

// newestAnswerBytes bounds how far back from the end of a tie-off knotd
// reads to find its newest section's headers.
const newestAnswerBytes = 16 << 20

// newestAnswer returns the newest section of the strand's tie-off, from
// win when it holds one (a window Tail read for the prompt) or else from
// the file; ok is false when the tie-off has no section.
func (v *Vault) newestAnswer(rel string, win *tieoff.Window) (sec tieoff.Section, ok bool, err error) {
	if win != nil && len(win.Sections) > 0 {
		return win.Sections[len(win.Sections)-1], true, nil
	}
	if win != nil && win.Size == 0 {
		return sec, false, nil
	}
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return sec, false, err
	}
	w, err := tieoff.Tail(v.fs, t, 1, newestAnswerBytes)
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(w.Sections) == 0 {
		return sec, false, nil
	}
	if err != nil {
		return sec, false, err
	}
	return w.Sections[len(w.Sections)-1], true, nil
}

// sectionTexts splits a tie-off window into the raw text of each section,
// without the separators between them.
func sectionTexts(win tieoff.Window) []string {
	texts := make([]string, 0, len(win.Sections))
	for i, s := range win.Sections {
		start := s.Offset - win.Start
		end := int64(len(win.Text))
		if i+1 < len(win.Sections) {
			end = win.Sections[i+1].Offset - win.Start
		}
		if start < 0 || start > end || end > int64(len(win.Text)) {
			continue
		}
		text := strings.TrimRight(string(win.Text[start:end]), " \t\r\n")
		text = strings.TrimSuffix(text, "\n---")
		texts = append(texts, strings.TrimRight(text, " \t\r\n"))
	}
	return texts
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// failureBody explains a failed run in the tie-off.
func failureBody(w *work, res agentrun.Result) string {
	what := fmt.Sprintf("The %s agent did not reply", w.agentName)
	switch res.Outcome {
	case agentrun.OutcomeTimeout:
		what = fmt.Sprintf("The %s agent timed out", w.agentName)
	case agentrun.OutcomeCanceled:
		what = fmt.Sprintf("The %s agent was stopped", w.agentName)
	}
	if res.Reason != "" {
		what += ": " + res.Reason
	}
	exit := tieoff.NoExitStatus
	if res.ExitCode >= 0 && res.Outcome != agentrun.OutcomeTimeout && res.Outcome != agentrun.OutcomeCanceled {
		exit = res.ExitCode
	}
	return tieoff.Failure{What: what, ExitStatus: exit, Duration: res.Duration, Stderr: res.Stderr}.Body()
}

// decodeJournal reads what commit journaled.
func decodeJournal(b []byte) (journal, error) {
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
		return j, fmt.Errorf("journal entry: %w", err)
	}
	return j, nil
}

// journal is what the pending journal keeps of a run's section: enough to
// append it again after a crash.
type journal struct {
	Section tieoff.Section `json:"section"`
	Replace bool           `json:"replace,omitempty"`
}

// commit makes a finished run durable in the order that survives a crash at
// any point: journal the section, append it, then commit the record and
// drop the journal entry in one transaction.
func (v *Vault) commit(ctx context.Context, w *work, rec state.Record, j journal, tl *runLog) error {
	enc, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("vault: journal run %s: %w", rec.LastRunID, err)
	}
	if v.settle(w) {
		// A save that was under way when knotd wrote the strand went
		// into the file knotd replaced and is back: the strand is not
		// the version the run saw, and its stamp must not say it is.
		rec.Stamp = state.Stamp{}
	}
	if w.unsyncedDir != "" {
		// The record below says the strand is knotd's version: make
		// the rename that put it there as durable first.
		sync := func(dir string) error { return vaultfs.SyncDir(v.fs, dir) }
		if v.hooks.syncDir != nil {
			sync = v.hooks.syncDir
		}
		if err := sync(w.unsyncedDir); err != nil {
			// The agent has replied: losing the reply (and running it
			// again) for a sync that failed would be worse than the
			// risk it leaves, that a crash now undoes the write.
			v.log.Warn("cannot sync the strand's folder after writing its knot_session; a crash now may undo that write", "strand", w.rel, "err", err)
		}
	}
	p := state.Pending{RunID: rec.LastRunID, Event: w.event, Record: rec, Content: w.content, Section: enc}
	if err := v.putPending(ctx, p); err != nil {
		return err
	}
	if v.hooks.journaled != nil {
		v.hooks.journaled(p.RunID)
	}
	return v.completeRun(p, j, false, tl)
}

// putPending journals the run p. The agent has replied: a journal that
// cannot be written (a full disk, too many open files) is tried again,
// with growing pauses, for as long as knotd watches (until it stops), so
// that the reply is kept and the agent is not run again for the same
// change. A pass (--once) tries a few times, then fails the run.
func (v *Vault) putPending(ctx context.Context, p state.Pending) error {
	deadline := v.now().Add(commitPatience)
	for pause := time.Second; ; pause = min(2*pause, maxRetryPause) {
		var err error
		if v.hooks.journaling != nil {
			err = v.hooks.journaling(p.RunID)
		}
		if err == nil {
			err = v.store.PutPending(p)
		}
		if err == nil || errors.Is(err, state.ErrCorrupt) || errors.Is(err, state.ErrSessionTaken) {
			return err
		}
		if !v.watching.Load() && v.now().After(deadline) {
			return err
		}
		v.log.Warn("cannot journal a finished run; knotd keeps its reply and tries again", "strand", p.Record.Path, "run", p.RunID, "in", pause, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (knotd stopped before the run could be journaled)", err)
		case <-time.After(pause):
		}
	}
}

// commitPatience is how long a pass (--once) keeps trying to journal a
// finished run; maxRetryPause bounds the pause between two tries, of a
// journal or of a strand whose processing failed for a passing reason.
const (
	commitPatience = 3 * time.Second
	maxRetryPause  = 5 * time.Minute
)

// complete appends a journaled run's section (unless check finds it already
// in the tie-off) and commits its record. When recovering (check), a
// record that a later run of the strand committed meanwhile is kept: the
// section is appended, the journal entry dropped.
func (v *Vault) complete(p state.Pending, j journal, check bool) error {
	var tl *runLog
	if check {
		tl = v.reopenRunLog(p.RunID, p.Record.Path)
		defer tl.close()
	}
	return v.completeRun(p, j, check, tl)
}

// completeRun is complete, recording the section's place in the run's
// transcript tl (which may be nil).
func (v *Vault) completeRun(p state.Pending, j journal, check bool, tl *runLog) error {
	t, err := strand.TieOffPath(p.Record.Path)
	if err != nil {
		return err
	}
	done, stale := false, false
	if check {
		done, err = tieoff.HasRun(v.fs, t, p.RunID, 0)
		if err != nil && !errors.Is(err, tieoff.ErrTorn) && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("vault: recover run %s: %w", p.RunID, err)
		}
		cur, has, err := v.store.Get(p.Record.Path)
		if err != nil {
			return err
		}
		// Run ids are UUID v7: they sort by the time the run started.
		stale = has && cur.LastRunID > p.RunID
	}
	var offset int64
	if done {
		offset = v.sectionOffset(t, p.RunID)
	} else {
		if j.Replace {
			err = tieoff.Replace(v.fs, t, j.Section)
		} else {
			offset, err = tieoff.Append(v.fs, t, j.Section)
		}
		if err != nil {
			return fmt.Errorf("vault: %s: write tie-off (the run stays journaled and is retried when knotd starts): %w", p.Record.Path, err)
		}
	}
	tl.tieOff(t, offset, j.Replace)
	if stale {
		return v.store.Update(func(tx *state.Tx) error { return tx.DeletePending(p.RunID) })
	}
	if v.hooks.completing != nil {
		if err := v.hooks.completing(p.RunID); err != nil {
			return err
		}
	}
	if err := v.store.Complete(p.RunID); err != nil {
		return err
	}
	if v.hooks.completed != nil {
		v.hooks.completed(p.RunID)
	}
	return nil
}
