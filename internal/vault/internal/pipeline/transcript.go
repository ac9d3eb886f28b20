package pipeline

import (
	"errors"
	"io/fs"
	"os"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/transcript"
)

// runLog writes one run's transcript. It is the vault's side of package
// transcript: what a run records and when.
//
//   - run.started and message.user are written from the agent's
//     Request.OnStart hook, before the agent's process starts; a run whose
//     agent could not continue its conversation makes a second attempt,
//     whose prompt is a second message.user (its command line differs only
//     in the session flag and is not recorded again; run.finished's notes
//     say why it happened).
//   - message.assistant: the agent's content blocks, one message.assistant
//     for each batch handed to Request.OnOutput while the agent runs (the
//     blocks that became final, for a CLI that streams them; the output as
//     it comes, for a plain one), so that a subscriber sees the run as it
//     happens; the rest of the output, with the notes on what could not be
//     read, once the agent is done.
//   - run.finished once the agent is done; a run that never started (a
//     strand that cannot be run, a request the runner refused) still gets
//     run.started and run.finished.
//   - tieoff.appended once the section is in the tie-off, also when crash
//     recovery writes it.
//
// A transcript is an audit record, not part of the run's durability: an
// error writing it is logged and never fails the run. A nil *runLog (its
// file could not be created) records nothing. Its methods are called from
// the run's goroutine, and onOutput from the goroutine reading
// the agent's output (or a timer's), never at the same time (see
// Request.OnOutput).
type runLog struct {
	h       Host
	tr      *transcript.Recorder
	runID   string
	strand  string
	started bool
	// streamed counts the blocks of the attempt under way that onOutput
	// recorded.
	streamed int
}

// masker returns the masker of a run of agent a: it knows the secret
// values of knotd's environment and of the agent's own env settings. It
// masks them in the run's transcript and in the section the run writes to
// the tie-off, a file that is synced and shared with the notes.
func masker(a agentrun.Agent) *transcript.Masker {
	env := os.Environ()
	for k, val := range a.Env {
		env = append(env, k+"="+val)
	}
	return transcript.NewMasker(env)
}

// createRunLog creates the transcript of a new run.
func (pl *Pipeline) createRunLog(runID, rel string, m *transcript.Masker) *runLog {
	h := pl.h
	tr, err := transcript.Create(h.Folder().Runs(), runID, &transcript.Options{Now: h.Now, Masker: m})
	if err != nil {
		h.Log().Warn("cannot create the run's transcript; the run goes on without it", "strand", rel, "run", runID, "err", err)
		return nil
	}
	return &runLog{h: h, tr: tr, runID: runID, strand: rel}
}

// reopenRunLog reopens the transcript of a run that crash recovery
// finishes. It returns nil when the run has no transcript, or when it
// already records its tie-off section.
func (pl *Pipeline) reopenRunLog(runID, rel string) *runLog {
	h := pl.h
	events, _, err := transcript.ReadRun(h.Folder().Runs(), runID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		h.Log().Warn("cannot read the run's transcript to complete it", "strand", rel, "run", runID, "err", err)
		return nil
	}
	for _, e := range events {
		if e.Type == transcript.TieOffAppended {
			return nil
		}
	}
	tr, err := transcript.Reopen(h.Folder().Runs(), runID, &transcript.Options{Now: h.Now, Masker: masker(agentrun.Agent{})})
	if err != nil {
		h.Log().Warn("cannot reopen the run's transcript to complete it", "strand", rel, "run", runID, "err", err)
		return nil
	}
	return &runLog{h: h, tr: tr, runID: runID, strand: rel, started: true}
}

// record writes p, logging a failure.
func (l *runLog) record(p transcript.Payload) {
	if l == nil {
		return
	}
	if _, err := l.tr.Record(p); err != nil {
		l.h.Log().Warn("cannot write the run's transcript", "strand", l.strand, "run", l.runID, "type", p.Type(), "err", err)
	}
}

// close syncs and closes the transcript, logging a failure.
func (l *runLog) close() {
	if l == nil {
		return
	}
	if err := l.tr.Close(); err != nil {
		l.h.Log().Warn("cannot close the run's transcript", "strand", l.strand, "run", l.runID, "err", err)
	}
}

// startedFor is the run.started payload of a run of w with req.
func startedFor(w *work, req *agentrun.Request, argv []string) transcript.Started {
	s := transcript.Started{
		Strand:  w.rel,
		Event:   w.event,
		Agent:   w.agentName,
		Preset:  presetOf(w.agent),
		Model:   w.agent.Model,
		Session: w.session,
		Argv:    argv,
	}
	if req != nil {
		s.Resume, s.Turn, s.FiredBy = req.Resume, req.Turn, string(req.FiredBy)
		if req.Model != "" {
			s.Model = req.Model
		}
	}
	return s
}

// onStart returns the Request.OnStart hook that records the run's start
// (the first attempt) or the prompt of its second attempt.
func (l *runLog) onStart(w *work, req *agentrun.Request) func(agentrun.Start) {
	return func(s agentrun.Start) {
		if l == nil {
			return
		}
		if !l.started {
			l.started = true
			l.record(startedFor(w, req, s.Argv))
		}
		l.streamed = 0
		l.record(transcript.UserMessage{Prompt: s.Prompt})
	}
}

// onOutput is the Request.OnOutput hook: it records each batch of final
// blocks as a message.assistant while the agent runs.
func (l *runLog) onOutput(msg transcript.AssistantMessage) {
	if l == nil {
		return
	}
	l.streamed += len(msg.Blocks)
	l.record(msg)
}

// failed records a run that was never started: w.failure says why.
func (l *runLog) failed(w *work) {
	if l == nil {
		return
	}
	l.started = true
	l.record(startedFor(w, nil, nil))
	l.record(transcript.Finished{Outcome: string(agentrun.OutcomeFailed), ExitCode: -1, Reason: w.failure})
}

// finish records what the agent produced and how the run ended. notes are
// added to run.finished's.
func (l *runLog) finish(w *work, req *agentrun.Request, res agentrun.Result, notes ...string) {
	if l == nil {
		return
	}
	if !l.started {
		// The agent never reached OnStart (a refused request, a command
		// line that could not be built, or an AgentRunner without the hook).
		l.started = true
		l.record(startedFor(w, req, res.Argv))
		if res.Prompt != "" {
			l.record(transcript.UserMessage{Prompt: res.Prompt})
		}
	}
	fin := transcript.Finished{
		Outcome:         string(res.Outcome),
		ExitCode:        res.ExitCode,
		Duration:        res.Duration,
		Reason:          res.Reason,
		Resume:          res.Resume,
		StdoutBytes:     res.StdoutBytes,
		StdoutTruncated: res.StdoutTruncated,
		Stderr:          res.Stderr,
		StderrTruncated: res.StderrTruncated,
		Notes:           append(append([]string(nil), res.Notes...), notes...),
	}
	if res.Usage != nil {
		u := transcript.Usage(*res.Usage)
		fin.Usage = &u
	}
	if msg := res.Message; msg != nil {
		rest := *msg
		rest.Blocks = msg.Blocks[min(l.streamed, len(msg.Blocks)):]
		// Nothing to add (all streamed, or an agent that printed
		// nothing): no empty message.
		if len(rest.Blocks) > 0 || len(rest.Notes) > 0 || rest.Truncated {
			l.record(rest)
		}
	}
	l.record(fin)
}

// canceled records a run stopped because knotd is stopping.
func (l *runLog) canceled(w *work, req *agentrun.Request, res agentrun.Result) {
	l.finish(w, req, res, "knotd stopped during the run: nothing was written to the tie-off, and the change is processed when knotd runs again")
}

// tieOff records that the run's section is in the tie-off tieOff (a
// vault-relative path) at offset.
func (l *runLog) tieOff(tieOff string, offset int64, replaced bool) {
	if l == nil {
		return
	}
	l.record(transcript.TieOff{Path: tieOff, Offset: offset, Replaced: replaced})
}

// sectionOffset finds the offset of run runID's section in the tie-off t
// (vault-relative), for a run that crash recovery found already written;
// -1 when it cannot be found.
func (pl *Pipeline) sectionOffset(t, runID string) int64 {
	h := pl.h
	secs, _, err := tieoff.Read(h.FS(), t)
	if err != nil {
		return -1
	}
	for i := len(secs) - 1; i >= 0; i-- {
		if secs[i].RunID == runID {
			return secs[i].Offset
		}
	}
	return -1
}

// presetOf is the preset an agent runs: its Preset, "digest" for the zero
// agent, "" for a generic command.
func presetOf(a agentrun.Agent) string {
	if a.Preset == "" && len(a.Command) == 0 {
		return agentrun.PresetDigest
	}
	return a.Preset
}
