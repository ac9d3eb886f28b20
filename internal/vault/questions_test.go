package vault

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/stretchr/testify/require"
)

// askingRunner runs the fake agent (a real subprocess) and plays the
// part of an agent at permissions ask for a note that holds the line
// "ASK WRITE <path> <text>": its first turn ends holding a Write of
// <path> (Result.Questions, as the claude preset reports a turn that
// ended tool_deferred); the turn that continues with an approval of that
// very call writes the file, as the agent's tool would.
type askingRunner struct {
	inner AgentRunner
	root  string
	mu    sync.Mutex
	reqs  []agentrun.Request
}

var (
	askLine  = regexp.MustCompile(`(?m)^ASK WRITE (\S+) (.*)$`)
	liveLine = regexp.MustCompile(`(?m)^ASKLIVE (\S+) WRITE (\S+) (.*)$`)
)

func (a *askingRunner) Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	if m := liveLine.FindStringSubmatch(string(req.Event.Strand.Content)); m != nil && !req.Continuing {
		// An ACP agent: it asks while it runs, and waits (up to its
		// ask_wait, m[1]) for the answer.
		wait, err := time.ParseDuration(m[1])
		if err != nil {
			return agentrun.Result{}, err
		}
		askCtx, cancel := context.WithTimeout(ctx, wait)
		an, ok := req.Ask(askCtx, writeCall(m[2], m[3]))
		cancel()
		if ok && an.Applies(writeCall(m[2], m[3])) && an.Verdict == question.Approve {
			if err := os.WriteFile(filepath.Join(a.root, m[2]), []byte(m[3]), 0o644); err != nil {
				return agentrun.Result{}, err
			}
		}
		return a.inner.Run(ctx, req)
	}
	res, err := a.inner.Run(ctx, req)
	m := askLine.FindStringSubmatch(string(req.Event.Strand.Content))
	if m == nil {
		m = liveLine.FindStringSubmatch(string(req.Event.Strand.Content))
		if m != nil {
			m = []string{m[0], m[2], m[3]}
		}
	}
	if err != nil || m == nil {
		return res, err
	}
	call := writeCall(m[1], m[2])
	if !req.Continuing {
		if !strings.HasPrefix(m[0], "ASKLIVE") {
			res.Questions = []question.Call{call}
		}
		return res, nil
	}
	for _, an := range req.Answers {
		if an.Applies(call) && an.Verdict == question.Approve {
			if err := os.WriteFile(filepath.Join(a.root, m[1]), []byte(m[2]), 0o644); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

func writeCall(path, text string) question.Call {
	in, _ := json.Marshal(map[string]string{"file_path": path, "content": text})
	return question.Call{Tool: "Write", Kind: question.KindEdit, Input: in, Path: path, Why: "I will write it."}
}

// requests returns the requests the runner was given.
func (a *askingRunner) requests() []agentrun.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]agentrun.Request(nil), a.reqs...)
}

// askEnv is a vault whose agent asks (askingRunner), opened, with the
// note n.md asking to write out.txt; its first run asked.
type askEnv struct {
	*env
	v  *Vault
	ar *askingRunner
	q  Question
}

func newAskEnv(t *testing.T, userConfig string) *askEnv {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	if userConfig != "" {
		cfg, err := os.ReadFile(filepath.Join(e.configDir, "config.yaml"))
		mustDo(t, err)
		e.userConfig(userConfig + string(cfg))
	}
	a := &askEnv{env: e, ar: &askingRunner{inner: &agentrun.Runner{}, root: e.root}}
	a.v = a.reopen()
	e.once(a.v, false) // first contact, with nothing in it
	e.write("n.md", "Please write it.\nASK WRITE out.txt hello\n")
	e.once(a.v, false)
	qs, err := a.v.Questions()
	mustDo(t, err)
	require.Len(t, qs, 1, "the held call waits as a question")
	a.q = qs[0]
	return a
}

// reopen opens the vault with the asking runner.
func (a *askEnv) reopen() *Vault {
	a.t.Helper()
	opts := a.options()
	opts.Agent = a.ar
	v, err := Open(a.root, opts)
	mustDo(a.t, err)
	a.t.Cleanup(func() {
		if v.store != nil {
			_ = v.Close()
		}
	})
	return v
}

// status returns the Status headers' kinds of n.md's tie-off sections:
// run, question, approve, deny, withdraw.
func (a *askEnv) kinds() []string {
	var ks []string
	for _, s := range a.sections("n.md") {
		switch {
		case s.Asked:
			ks = append(ks, "question")
		case s.Verdict != "":
			ks = append(ks, s.Verdict)
		default:
			ks = append(ks, "run")
		}
	}
	return ks
}

// TestQuestions_HeldCallAsks: a run that ends holding a call leaves its
// own section and a question section (its own run id, the question's id
// and the call's hash in its marker, how to answer in its body), and
// Questions lists it; the note stays answered (a pass runs nothing).
func TestQuestions_HeldCallAsks(t *testing.T) {
	a := newAskEnv(t, "")
	call := writeCall("out.txt", "hello")
	require.Equal(t, "n.md", a.q.Strand)
	require.Equal(t, "out.txt", a.q.Call.Path)
	secs := a.sections("n.md")
	require.Equal(t, []string{"run", "question"}, a.kinds())
	qs := secs[1]
	require.Equal(t, a.q.ID, qs.Question)
	require.Equal(t, call.Hash(), qs.Call)
	require.NotEqual(t, secs[0].RunID, qs.RunID, "the question has a run id of its own")
	require.Equal(t, question.NewID(secs[0].RunID, call.Hash()), a.q.ID, "the id binds the asking run and the call")
	require.Contains(t, qs.Body, "knot_answer: approve "+a.q.ID)
	require.Contains(t, qs.Body, "knotd approve "+a.q.ID)
	require.False(t, a.exists("out.txt"))
	n := len(a.ar.requests())
	a.once(a.v, false)
	require.Len(t, a.ar.requests(), n, "a pass after the question runs nothing")
}

// TestQuestions_Approve: an approval (with knotd approve, or in the
// note's knot_answer) writes an answer section and continues the turn
// with the answer: the file appears and the run's reply follows. An
// approval in the note alone runs nothing else.
func TestQuestions_Approve(t *testing.T) {
	for _, how := range []string{"command", "note"} {
		t.Run(how, func(t *testing.T) {
			a := newAskEnv(t, "")
			if how == "command" {
				got, err := a.v.AnswerQuestion(a.q.ID, question.Approve, "", question.FromCommand)
				mustDo(t, err)
				require.Equal(t, a.q.ID, got.ID)
				require.Equal(t, []string{"run", "question", "approve"}, a.kinds(), "the answer is written at once")
			} else {
				a.write("n.md", "---\nknot_answer: approve "+strings.ToUpper(a.q.ID[:1])+a.q.ID[1:]+"\n---\nPlease write it.\nASK WRITE out.txt hello\n")
			}
			a.once(a.v, false)
			require.Equal(t, []string{"run", "question", "approve", "run"}, a.kinds())
			require.Equal(t, "hello", a.read("out.txt"), "the approved call ran")
			reqs := a.ar.requests()
			last := reqs[len(reqs)-1]
			require.True(t, last.Continuing)
			require.Equal(t, agentrun.FiredByAnswer, last.FiredBy)
			require.Equal(t, reqs[0].Event.Type, last.Event.Type, "the asking run's event")
			require.Len(t, last.Answers, 1)
			require.Equal(t, question.Approve, last.Answers[0].Verdict)
			require.Equal(t, writeCall("out.txt", "hello").Hash(), last.Answers[0].CallHash)
			qs, err := a.v.Questions()
			mustDo(t, err)
			require.Empty(t, qs)
			n := len(reqs)
			a.once(a.v, false)
			require.Len(t, a.ar.requests(), n, "the answer in the note runs nothing more")
		})
	}
}

// TestQuestions_Deny: a denial continues the turn with the denial and its
// reason; the file never appears.
func TestQuestions_Deny(t *testing.T) {
	a := newAskEnv(t, "")
	_, err := a.v.AnswerQuestion(a.q.ID, question.Deny, "not  now\nplease", question.FromCommand)
	mustDo(t, err)
	a.once(a.v, false)
	require.Equal(t, []string{"run", "question", "deny", "run"}, a.kinds())
	require.False(t, a.exists("out.txt"))
	reqs := a.ar.requests()
	last := reqs[len(reqs)-1]
	require.True(t, last.Continuing)
	require.Equal(t, question.Deny, last.Answers[0].Verdict)
	require.Equal(t, "not now please", last.Answers[0].Why, "the agent is told why, on one line")
	_, err = a.v.AnswerQuestion(a.q.ID, question.Approve, "", question.FromCommand)
	require.ErrorIs(t, err, ErrNoQuestion, "a question is answered once")
}

// TestQuestions_WrongIDs: an answer in a note to another note's question,
// or to an unknown id, does nothing.
func TestQuestions_WrongIDs(t *testing.T) {
	a := newAskEnv(t, "")
	n := len(a.ar.requests())
	a.write("other.md", "---\nknot_answer: [approve "+a.q.ID+", deny 0badc0de]\n---\nhello\n")
	a.write("n.md", "---\nknot_answer: approve 0badc0de\n---\nPlease write it.\nASK WRITE out.txt hello\n")
	a.once(a.v, false)
	qs, err := a.v.Questions()
	mustDo(t, err)
	require.Len(t, qs, 1, "the question still waits")
	require.False(t, a.exists("out.txt"))
	require.Equal(t, []string{"run", "question"}, a.kinds()[:2])
	for _, r := range a.ar.requests()[n:] {
		require.False(t, r.Continuing, "no turn continued")
	}
	_, err = a.v.AnswerQuestion("0badc0de", question.Approve, "", question.FromCommand)
	require.ErrorIs(t, err, ErrNoQuestion)
}

// TestQuestions_AnswersFromMachine: with answers_from: machine, an answer
// in the note is ignored (and the question says so), knotd approve works.
func TestQuestions_AnswersFromMachine(t *testing.T) {
	a := newAskEnv(t, "answers_from: machine\n")
	require.Contains(t, a.sections("n.md")[1].Body, "answers_from: machine")
	require.NotContains(t, a.sections("n.md")[1].Body, "knot_answer: approve")
	a.write("n.md", "---\nknot_answer: approve "+a.q.ID+"\n---\nPlease write it.\nASK WRITE out.txt hello\n")
	a.once(a.v, false)
	require.False(t, a.exists("out.txt"))
	qs, err := a.v.Questions()
	mustDo(t, err)
	require.Len(t, qs, 1, "the note's answer is ignored")
	_, err = a.v.AnswerQuestion(a.q.ID, question.Approve, "", question.FromNote)
	require.ErrorIs(t, err, ErrAnswersFromMachine)
	_, err = a.v.AnswerQuestion(a.q.ID, question.Approve, "", question.FromCommand)
	mustDo(t, err)
	a.once(a.v, false)
	require.Equal(t, "hello", a.read("out.txt"))
}

// TestQuestions_SurviveRestart: a waiting question survives a restart
// (the state), and a lost state (rebuilt from the tie-off, whose answer
// binds the same call).
func TestQuestions_SurviveRestart(t *testing.T) {
	for _, lost := range []bool{false, true} {
		name := "restart"
		if lost {
			name = "state lost"
		}
		t.Run(name, func(t *testing.T) {
			a := newAskEnv(t, "")
			a.close(a.v)
			if lost {
				mustDo(t, os.Remove(a.statePath()))
			}
			a.v = a.reopen()
			a.once(a.v, false)
			qs, err := a.v.Questions()
			mustDo(t, err)
			require.Len(t, qs, 1)
			require.Equal(t, a.q.ID, qs[0].ID)
			require.Equal(t, "n.md", qs[0].Strand)
			_, err = a.v.AnswerQuestion(a.q.ID, question.Approve, "", question.FromCommand)
			mustDo(t, err)
			a.once(a.v, false)
			require.Equal(t, "hello", a.read("out.txt"), "the approval binds the call asked before the restart")
		})
	}
}

// TestQuestions_ChangeWithdraws: a change of the note while its question
// waits withdraws it (an answer section saying the agent gets the change)
// and runs the change as usual; an answer to it then does nothing.
func TestQuestions_ChangeWithdraws(t *testing.T) {
	a := newAskEnv(t, "")
	a.write("n.md", "Never mind, just say hi.\n")
	a.once(a.v, false)
	require.Equal(t, []string{"run", "question", "withdraw", "run"}, a.kinds())
	secs := a.sections("n.md")
	require.Contains(t, secs[2].Body, "the agent gets the change")
	reqs := a.ar.requests()
	require.False(t, reqs[len(reqs)-1].Continuing)
	_, err := a.v.AnswerQuestion(a.q.ID, question.Approve, "", question.FromCommand)
	require.ErrorIs(t, err, ErrNoQuestion)
}

// TestQuestions_PauseHoldsTheTurn: a paused note's answered question
// continues only once the note is resumed.
func TestQuestions_PauseHoldsTheTurn(t *testing.T) {
	a := newAskEnv(t, "")
	ctx := context.Background()
	_, err := a.v.Control().Pause(ctx, []string{"n.md"}, "")
	mustDo(t, err)
	_, err = a.v.AnswerQuestion(a.q.ID, question.Approve, "", question.FromCommand)
	mustDo(t, err)
	a.once(a.v, false)
	require.False(t, a.exists("out.txt"), "the paused note's turn waits")
	_, err = a.v.Control().Resume(ctx, []string{"n.md"})
	mustDo(t, err)
	a.once(a.v, false)
	require.Equal(t, "hello", a.read("out.txt"))
}

// TestQuestions_AskWhileRunning: an agent that asks while it runs (ACP's
// request for permission) has its question written at once; an answer
// given while it waits reaches it (no second run); one given after its
// wait ended continues the turn in a run of its own.
func TestQuestions_AskWhileRunning(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "answered while it waits"
		if late {
			name = "answered after the wait"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.useAgent("", fakeagent.Echo)
			a := &askEnv{env: e, ar: &askingRunner{inner: &agentrun.Runner{}, root: e.root}}
			a.v = a.reopen()
			e.once(a.v, false)
			wait := "1h"
			if late {
				wait = "10ms"
			}
			e.write("n.md", "Please write it.\nASKLIVE "+wait+" WRITE out.txt hello\n")
			done := make(chan error, 1)
			go func() {
				_, err := a.v.Once(context.Background(), OnceOptions{})
				done <- err
			}()
			qs := a.waitQuestions(1)
			if late {
				require.NoError(t, <-done)
				require.Equal(t, []string{"question", "run"}, a.kinds())
			}
			_, err := a.v.AnswerQuestion(qs[0].ID, question.Approve, "", question.FromConsole)
			mustDo(t, err)
			if late {
				a.once(a.v, false)
				require.Equal(t, []string{"question", "run", "approve", "run"}, a.kinds())
				reqs := a.ar.requests()
				require.True(t, reqs[len(reqs)-1].Continuing)
			} else {
				require.NoError(t, <-done)
				require.Equal(t, []string{"question", "approve", "run"}, a.kinds())
				require.Len(t, a.ar.requests(), 1, "the agent that waited needs no second run")
			}
			require.Equal(t, "hello", a.read("out.txt"))
			qs, err = a.v.Questions()
			mustDo(t, err)
			require.Empty(t, qs)
		})
	}
}

// waitQuestions waits until n questions wait, and returns them.
func (a *askEnv) waitQuestions(n int) []Question {
	a.t.Helper()
	var qs []Question
	testutil.WaitFor(a.t, waitTimeout, "the questions to wait", func() bool {
		var err error
		qs, err = a.v.Questions()
		mustDo(a.t, err)
		return len(qs) == n
	})
	return qs
}

// TestQuestions_Daemon: in the daemon, an answer written into the note
// reaches an agent that waits for it while it runs, and knotd approve
// continues a turn that ended holding its call at once.
func TestQuestions_Daemon(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	a := &askEnv{env: e, ar: &askingRunner{inner: &agentrun.Runner{}, root: e.root}}
	a.v = a.reopen()
	e.once(a.v, false)
	w := e.watch(a.v, WatchOptions{})

	e.write("n.md", "Please write it.\nASKLIVE 1h WRITE out.txt hello\n")
	q := a.waitQuestions(1)[0]
	e.write("n.md", "---\nknot_answer: approve "+q.ID+"\n---\nPlease write it.\nASKLIVE 1h WRITE out.txt hello\n")
	testutil.WaitFor(t, waitTimeout, "the file the approved call writes", func() bool { return e.exists("out.txt") })
	w.settle()
	require.Equal(t, []string{"question", "approve", "run"}, a.kinds())
	require.Len(t, a.ar.requests(), 1, "the answer in the note ran nothing more")

	e.write("m.md", "Please write it.\nASK WRITE other.txt hi\n")
	q = a.waitQuestions(1)[0]
	require.Equal(t, "m.md", q.Strand)
	_, err := a.v.AnswerQuestion(q.ID, question.Approve, "", question.FromCommand)
	mustDo(t, err)
	testutil.WaitFor(t, waitTimeout, "the continued turn's file", func() bool { return e.exists("other.txt") })
	w.settle()
	reqs := a.ar.requests()
	require.True(t, reqs[len(reqs)-1].Continuing)
	require.Equal(t, agentrun.FiredByAnswer, reqs[len(reqs)-1].FiredBy)
}

// TestQuestions_AnswerAndChange: an answer saved with a change of the
// note continues the held turn first, then runs the change.
func TestQuestions_AnswerAndChange(t *testing.T) {
	a := newAskEnv(t, "")
	a.write("n.md", "---\nknot_answer: approve "+a.q.ID+"\n---\nPlease write it, and say thanks.\nASK WRITE out.txt hello\n")
	a.once(a.v, false)
	require.Equal(t, "hello", a.read("out.txt"))
	reqs := a.ar.requests()
	require.Len(t, reqs, 3)
	require.True(t, reqs[1].Continuing, "the answer first")
	require.False(t, reqs[2].Continuing, "then the change")
	require.Contains(t, string(reqs[2].Event.Strand.Content), "say thanks")
	require.Equal(t, []string{"run", "question", "approve", "run", "run"}, a.kinds()[:5])
}

// TestQuestions_AnsweredElsewhere: a question whose answer section came
// into the tie-off from another device (a sync) no longer waits here, and
// this device does not continue the turn (the device that answered does).
func TestQuestions_AnsweredElsewhere(t *testing.T) {
	a := newAskEnv(t, "")
	secs := a.sections("n.md")
	answer := tieoff.Section{Event: secs[1].Event, Strand: "n.md", Time: secs[1].Time, RunID: "01a221c7-0000-7000-8000-000000000001",
		Question: a.q.ID, Verdict: string(question.Approve), Body: "Approved on the phone's knotd.\n"}
	_, err := tieoff.Append(a.vaultRoot(), "n.tieoff.md", answer)
	mustDo(t, err)
	_, err = a.v.AnswerQuestion(a.q.ID, question.Deny, "", question.FromCommand)
	require.ErrorIs(t, err, ErrNoQuestion, "answered on the other device already")
	// The note changes only in knotd's keys (nothing runs for it), so
	// that knotd takes it up.
	a.write("n.md", "---\nknot_answer: approve "+a.q.ID+"\n---\nPlease write it.\nASK WRITE out.txt hello\n")
	n := len(a.ar.requests())
	a.once(a.v, false)
	qs, err := a.v.Questions()
	mustDo(t, err)
	require.Empty(t, qs)
	require.Len(t, a.ar.requests(), n, "no turn continued here")
	require.False(t, a.exists("out.txt"))
	require.Equal(t, []string{"run", "question", "approve"}, a.kinds())
}

// TestQuestions_ClaudePreset: the claude preset at permissions: ask (the
// Claude fake, knotd's own hook) through the vault: the held Write is a
// question and no file; an approval in the note resumes the turn, the
// file appears and the reply follows; a denial leaves the file absent and
// the agent is told the reason.
func TestQuestions_ClaudePreset(t *testing.T) {
	for _, verdict := range []question.Verdict{question.Approve, question.Deny} {
		t.Run(string(verdict), func(t *testing.T) {
			e := newEnv(t)
			e.userConfig("default_agent: claude\nagents:\n" + e.fakeAgentYAML("claude", "claude", fakeagent.Claude) + "    permissions: ask\n")
			v := e.open()
			e.once(v, false)
			body := "Please write it.\n\n" + claudetest.FakeTool + "Write made.txt hello\n"
			e.write("n.md", body)
			e.once(v, false)
			qs, err := v.Questions()
			mustDo(t, err)
			require.Len(t, qs, 1, "the held Write waits as a question")
			require.Equal(t, "Write", qs[0].Call.Tool)
			require.Equal(t, "made.txt", qs[0].Call.Path)
			require.False(t, e.exists("made.txt"))
			a := &askEnv{env: e}
			require.Equal(t, []string{"question"}, a.kinds(), "a turn that held its call without a word has no section of its own")

			e.write("n.md", "---\nknot_answer: "+string(verdict)+" "+qs[0].ID+" not today\n---\n"+body)
			e.once(v, false)
			require.Equal(t, []string{"question", string(verdict), "run"}, a.kinds())
			reply := e.sections("n.md")[2].Body
			if verdict == question.Approve {
				require.Equal(t, "hello", e.read("made.txt"))
				require.Contains(t, reply, "File created")
			} else {
				require.False(t, e.exists("made.txt"))
				require.Contains(t, reply, "not today", "the agent is told why")
			}
			calls := e.calls()
			require.Len(t, calls, 2)
			require.Empty(t, calls[1].Stdin, "the turn resumes with an empty prompt")
		})
	}
}

// TestQuestions_RacingAnswers: answers given at once from everywhere
// (the command, the console, a withdrawal) apply once: one succeeds, the
// others find no question, and the tie-off holds one answer section.
func TestQuestions_RacingAnswers(t *testing.T) {
	a := newAskEnv(t, "")
	verdicts := []question.Verdict{question.Approve, question.Deny, question.Withdraw}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 30 {
		wg.Go(func() {
			_, err := a.v.AnswerQuestion(a.q.ID, verdicts[i%3], "", question.FromConsole)
			if err != nil && !errors.Is(err, ErrNoQuestion) {
				t.Error(err)
			}
			if err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 1, won, "one answer applies")
	a.once(a.v, false)
	answers := 0
	for _, k := range a.kinds() {
		if k != "run" && k != "question" {
			answers++
		}
	}
	require.Equal(t, 1, answers, "one answer section: %v", a.kinds())
}
