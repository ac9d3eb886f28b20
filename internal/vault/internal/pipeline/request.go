package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/knotd/knotd/internal/config"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
)

// What step 4 of the pipeline (pipeline.go), run, gives the agent and
// the tie-off: the agent request (the strand, its previous version, the
// tie-off's newest sections), the failure section's text, and the journal
// entry step 5 writes.

// request builds the agent request for w.
func (pl *Pipeline) request(w *work, job Job, runID string, now time.Time) (agentrun.Request, error) {
	h := pl.h
	req := agentrun.Request{
		RunID:    runID,
		Vault:    h.Root(),
		StateDir: h.Folder().Dir,
		Event:    strand.Event{Type: w.event, Strand: strand.Strand{Path: w.rel, Abs: w.abs, Content: w.content}, Time: now},
		Previous: w.previous,
		Session:  w.session,
		Resume:   w.resume,
		Turn:     w.rec.Turns + 1,
		FiredBy:  job.FiredBy,
		Agent:    w.agent,
		Model:    w.fields.Model,
		// The CLIs that take a cap on one run's cost get the budget's.
		MaxCostUSD: h.Config().Budget.RunUSD,
		Now:        now,
	}
	if w.newSession {
		req.Resume = ""
	}
	if w.event == strand.Scheduled {
		req.Schedule = job.Scheduled
	}
	if c := w.cont; c != nil && c.Answer != nil {
		// The turn that held the call goes on, with the user's answer.
		a := *c.Answer
		if c.Call.Input != nil || c.Call.Path != "" || c.Call.Command != "" || c.Call.URL != "" {
			a.Summary = question.Summary(c.Call) // a rebuilt question knows only its hash
		}
		req.Continuing, req.Answers, req.FiredBy = true, []question.Answer{a}, agentrun.FiredByAnswer
		if c.Resume != "" {
			// Else the question was rebuilt from the tie-off: the
			// note's conversation is the one the state knows.
			req.Resume = c.Resume
		}
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
	pl.loadTail(w)
	win := w.tail
	if w.tailErr != nil {
		h.Log().Warn("cannot read the tie-off's newest sections; the prompt goes without them", "strand", w.rel, "err", w.tailErr)
	}
	if win != nil {
		req.TieOff = sectionTexts(*win)
		for _, s := range win.Sections {
			if !w.newSession && s.Session == w.session && !s.Failed && !s.Paused {
				req.SessionAnswered = true
			}
		}
		if win.Start > 0 {
			// Turns counts the sections knotd appended; the exact count
			// of older sections would cost a read of the whole history.
			req.TieOffOmitted = max(1, w.rec.Turns-len(req.TieOff))
		}
	}
	if w.sameConversation(req.Resume) {
		req.Continues = req.Previous != nil && w.event == strand.Modified && w.answeredLast()
		req.LastContext, req.LastContextWindow = w.rec.ContextTokens, w.rec.ContextWindow
	}
	return req, nil
}

// sameConversation reports whether a run given the resume handle resume
// continues the conversation whose turn the strand's record was last
// processed by: the same session, the handle the record keeps (none, for
// a command that keeps its conversation under the session), and the same
// agent.
func (w *work) sameConversation(resume string) bool {
	return !w.newSession && w.rec.Agent != "" && w.rec.Agent == w.agent.Identity() &&
		w.rec.Session == w.session && resume == w.rec.Resume
}

// answeredLast reports whether the record's last run answered the
// version it records (its reply is in the conversation), and the tie-off
// agrees: its newest run section is that run's answer, when the newest
// sections were read.
func (w *work) answeredLast() bool {
	if w.rec.LastOutcome != state.OutcomeSucceeded || w.rec.LastRunID == "" {
		return false
	}
	if w.tail == nil {
		return true
	}
	sec, ok := newestRun(w.tail.Sections)
	if !ok {
		return w.tail.Start > 0 // the answer is older than the sections read
	}
	return sec.RunID == w.rec.LastRunID && !sec.Failed && (sec.Session == "" || sec.Session == w.session)
}

// readTail reads the newest sections of the strand's tie-off, as many as
// a prompt shows and a little more (agentrun bounds them again and marks
// what it leaves out); nil when there is no tie-off.
func (pl *Pipeline) readTail(rel string) (*tieoff.Window, error) {
	h := pl.h
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return nil, err
	}
	lim := h.Config().Limits
	def := agentrun.DefaultLimits()
	if lim.TieOffSections <= 0 {
		lim.TieOffSections = def.TieOffSections
	}
	if lim.TieOffBytes <= 0 {
		lim.TieOffBytes = def.TieOffBytes
	}
	win, err := tieoff.Tail(h.FS(), t, lim.TieOffSections, 2*lim.TieOffBytes)
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

// NewestAnswer returns the newest section of the strand's tie-off that
// is a run's (knotd's notices that it paused the note are not answers),
// from win when it holds one (a window Tail read for the prompt) or else
// from the file; ok is false when the tie-off has no such section among
// its newest.
func (pl *Pipeline) NewestAnswer(rel string, win *tieoff.Window) (sec tieoff.Section, ok bool, err error) {
	h := pl.h
	if win != nil {
		if sec, ok := newestRun(win.Sections); ok || win.Start == 0 {
			return sec, ok, nil
		}
	}
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return sec, false, err
	}
	w, err := tieoff.Tail(h.FS(), t, newestAnswerSections, newestAnswerBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return sec, false, nil
	}
	if err != nil {
		return sec, false, err
	}
	sec, ok = newestRun(w.Sections)
	return sec, ok, nil
}

// newestAnswerSections is how many of a tie-off's newest sections
// NewestAnswer reads to find a run's past a pause notice, questions and
// answers.
const newestAnswerSections = 12

// newestRun returns the newest of secs that is not a pause notice.
func newestRun(secs []tieoff.Section) (tieoff.Section, bool) {
	for i := len(secs) - 1; i >= 0; i-- {
		if secs[i].IsRun() || secs[i].Asked && secs[i].Hash != "" {
			// A question records what its turn answered: a turn that
			// ended holding a call without a word has no section of
			// its own.
			return secs[i], true
		}
	}
	return tieoff.Section{}, false
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

// stateUsage is u as the state records it.
func stateUsage(u *agentrun.Usage) *state.Usage {
	if u == nil {
		return nil
	}
	return &state.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD}
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
	switch {
	case res.NotStarted != "":
		what = fmt.Sprintf("The %s agent could not be started: %s", w.agentName, res.NotStarted)
		return tieoff.Failure{What: what, ExitStatus: tieoff.NoExitStatus, NotStarted: true, Duration: res.Duration, Stderr: res.Stderr}.Body()
	case res.Outcome == agentrun.OutcomeTimeout:
		what = fmt.Sprintf("The %s agent timed out", w.agentName)
	case res.Outcome == agentrun.OutcomeCanceled:
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

// Journal is what the pending journal keeps of a run's section: enough to
// append it again after a crash.
type Journal struct {
	Section tieoff.Section `json:"section"`
	Replace bool           `json:"replace,omitempty"`
	// Quiet says the run has no section: its turn ended holding calls
	// for the user without a word, and its questions' sections (whose
	// markers record what it answered) stand for it.
	Quiet bool `json:"quiet,omitempty"`
	// Asking is the run as its questions record it, and Questions the
	// calls it ended holding: asked (Questions.Asked) before the run is
	// complete, again after a crash.
	Asking    *Asking         `json:"asking,omitempty"`
	Questions []question.Call `json:"questions,omitempty"`
}

// DecodeJournal reads what commit journaled.
func DecodeJournal(b []byte) (Journal, error) {
	var j Journal
	if err := json.Unmarshal(b, &j); err != nil {
		return j, fmt.Errorf("journal entry: %w", err)
	}
	return j, nil
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
	return body[:cut] + fmt.Sprintf("\n[… %s of this explanation left out …]\n", config.FormatSize(int64(len(body)-cut)))
}
