package agentrun

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/knotd/knotd/internal/question"
)

// asker is a Request.Ask that records the calls it is asked about and
// answers each by answer (nil: it waits until its context ends and
// reports no answer, as a user who does not answer in time).
type asker struct {
	mu       sync.Mutex
	calls    []question.Call
	deadline []time.Duration // how long each call's context had left
	answer   func(question.Call) (question.Answer, bool)
}

func (a *asker) ask(ctx context.Context, c question.Call) (question.Answer, bool) {
	a.mu.Lock()
	a.calls = append(a.calls, c)
	left := time.Duration(-1)
	if d, ok := ctx.Deadline(); ok {
		left = time.Until(d)
	}
	a.deadline = append(a.deadline, left)
	answer := a.answer
	a.mu.Unlock()
	if answer == nil {
		<-ctx.Done()
		return question.Answer{}, false
	}
	return answer(c)
}

// verdicts answers the write with w and the command with cmd ("": no
// answer in time).
func verdicts(w, cmd question.Verdict, why string) func(question.Call) (question.Answer, bool) {
	return func(c question.Call) (question.Answer, bool) {
		v := w
		if c.Kind == question.KindCommand {
			v = cmd
		}
		if v == "" {
			return question.Answer{}, false
		}
		return question.Answer{ID: question.NewID("run", c.Hash()), CallHash: c.Hash(), Verdict: v, Why: why, From: question.FromNote}, true
	}
}

// askRun runs the fake ACP agent in mode "ask" at permissions ask, with
// the answers and Ask given (ask nil: no Ask), and returns its result, the
// run's file system and the request.
func askRun(t *testing.T, answers []question.Answer, ask *asker, wait time.Duration) (Result, *testFS, Request) {
	t.Helper()
	agent, _ := fakeACP(t, "ask")
	agent.Permissions, agent.AskWait = PermAsk, wait
	req := runRequest(t, agent, planV1)
	fs := &testFS{files: map[string]string{}}
	req.FS, req.Answers = fs, answers
	if ask != nil {
		req.Ask = ask.ask
	}
	return mustRun(t, &Runner{}, req), fs, req
}

// askedCalls are the two calls the fake asks about, as the run in vault
// holds them, found by asking them once.
func askedCalls(t *testing.T) (write, command question.Call) {
	t.Helper()
	a := &asker{answer: verdicts(question.Deny, question.Deny, "")}
	askRun(t, nil, a, 0)
	if len(a.calls) != 2 {
		t.Fatalf("Ask was called for %d calls; want 2", len(a.calls))
	}
	return a.calls[0], a.calls[1]
}

// TestACP_AskHeldCall: at permissions ask, an ACP agent's request for
// permission to write a file and to run a command each reach Request.Ask
// as a question.Call that says what the call does and why (what the agent
// said just before), with Ask's wait bounded by ask_wait; the user's
// answer is the request's answer: an approved write goes through knotd's
// file system, a denied command is refused.
func TestACP_AskHeldCall(t *testing.T) {
	a := &asker{answer: verdicts(question.Approve, question.Deny, "not now")}
	res, fs, req := askRun(t, nil, a, 90*time.Second)
	if res.Outcome != OutcomeOK || !strings.HasSuffix(res.Reply, "[write: allow] [command: reject]") {
		t.Fatalf("Run = %s %q reply %q; want ok, the write allowed and the command rejected", res.Outcome, res.Reason, res.Reply)
	}
	if len(a.calls) != 2 {
		t.Fatalf("Ask was called for %d calls; want 2: %+v", len(a.calls), a.calls)
	}
	w, c := a.calls[0], a.calls[1]
	if w.Tool != "Write ask.txt" || w.Kind != question.KindEdit || w.Path != "ask.txt" || w.ToolUseID != "ask-write-1" ||
		w.Why != "I will write ask.txt." || !strings.Contains(w.Diff, "+approved text") || !strings.Contains(w.Diff, "b/ask.txt") || w.Command != "" {
		t.Errorf("the write's call = %+v", w)
	}
	if c.Tool != "touch ran.txt" || c.Kind != question.KindCommand || c.Command != "touch ran.txt" || c.Path != "" || c.Diff != "" ||
		c.Why != "I will run a command." || string(question.Canonical(c.Input)) != `{"command":"touch ran.txt"}` {
		t.Errorf("the command's call = %+v (input %s)", c, c.Input)
	}
	for i, left := range a.deadline {
		if left <= 80*time.Second || left > 90*time.Second {
			t.Errorf("Ask %d had %v left; want ask_wait's 90s", i, left)
		}
	}
	if got := fs.files[filepath.Join(req.Vault, "ask.txt")]; got != "approved text\n" {
		t.Errorf("ask.txt through knotd's file system = %q; want the approved write", got)
	}
	if !hasNote(res.Notes, "approved by the user") || !hasNote(res.Notes, "denied by the user ("+question.NewID("run", c.Hash())+"): not now") {
		t.Errorf("notes %q; want the approval and the denial with its reason", res.Notes)
	}
}

// TestACP_AskAnswers: the run's Answers decide the calls they are bound
// to (by the call's hash) without asking: an approval allows, a denial
// rejects; an answer bound to another call's hash does not apply, and the
// call is asked about.
func TestACP_AskAnswers(t *testing.T) {
	write, command := askedCalls(t)
	answer := func(c question.Call, v question.Verdict, why string) question.Answer {
		return question.Answer{ID: question.NewID("run-0", c.Hash()), CallHash: c.Hash(), Verdict: v, Why: why, From: question.FromCommand}
	}
	for _, tc := range []struct {
		name    string
		answers []question.Answer
		reply   string
		asked   []question.Kind // the calls Ask was called for
		note    string
	}{
		{name: "approved", answers: []question.Answer{answer(write, question.Approve, ""), answer(command, question.Approve, "")},
			reply: "[write: allow] [command: allow]", note: "approved by the user's answer"},
		{name: "denied", answers: []question.Answer{answer(write, question.Deny, "keep it as it is"), answer(command, question.Deny, "")},
			reply: "[write: reject] [command: reject]", note: "denied by the user's answer " + answer(write, question.Deny, "").ID + ": keep it as it is"},
		// The approval of the command is bound to its hash: it does not
		// approve the write, which is asked about (and denied).
		{name: "bound to another call", answers: []question.Answer{answer(command, question.Approve, "")},
			reply: "[write: reject] [command: allow]", asked: []question.Kind{question.KindEdit}},
		{name: "a withdrawal decides nothing", answers: []question.Answer{answer(write, question.Withdraw, ""), answer(command, question.Withdraw, "")},
			reply: "[write: reject] [command: reject]", asked: []question.Kind{question.KindEdit, question.KindCommand}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &asker{answer: verdicts(question.Deny, question.Deny, "")}
			res, fs, req := askRun(t, tc.answers, a, 0)
			if res.Outcome != OutcomeOK || !strings.HasSuffix(res.Reply, tc.reply) {
				t.Fatalf("Run = %s %q reply %q; want ok ending %q", res.Outcome, res.Reason, res.Reply, tc.reply)
			}
			var asked []question.Kind
			for _, c := range a.calls {
				asked = append(asked, c.Kind)
			}
			if !slices.Equal(asked, tc.asked) {
				t.Errorf("Ask was called for %v; want %v", asked, tc.asked)
			}
			_, written := fs.files[filepath.Join(req.Vault, "ask.txt")]
			if written != strings.Contains(tc.reply, "[write: allow]") {
				t.Errorf("ask.txt written %v; want it written only when allowed", written)
			}
			if tc.note != "" && !hasNote(res.Notes, tc.note) {
				t.Errorf("notes %q; want %q", res.Notes, tc.note)
			}
		})
	}
}

// TestACP_AskUnanswered: a question nobody answers within ask_wait is
// refused for now, the run goes on and ends ok with the agent's reply; a
// run with no Ask (a dry run, a test) refuses at once the same way; and
// knotd's file system refuses a write nobody approved.
func TestACP_AskUnanswered(t *testing.T) {
	for _, tc := range []struct {
		name string
		ask  *asker
	}{
		{"no answer in time", &asker{}},
		{"no Ask", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, fs, _ := askRun(t, nil, tc.ask, time.Second)
			if res.Outcome != OutcomeOK || !strings.HasSuffix(res.Reply, "[write: reject] [command: reject]") {
				t.Fatalf("Run = %s %q reply %q; want ok with both calls refused", res.Outcome, res.Reason, res.Reply)
			}
			if tc.ask != nil {
				if len(tc.ask.calls) != 2 || time.Since(start) < 2*time.Second {
					t.Errorf("Ask called %d times, the run took %v; want 2 waits of ask_wait (1s)", len(tc.ask.calls), time.Since(start))
				}
				if !hasNote(res.Notes, "the user has not answered within ask_wait (1s): refused for now") {
					t.Errorf("notes %q; want the refusal for now", res.Notes)
				}
			} else if !hasNote(res.Notes, "held for the user's answer, which knotd cannot wait for in this run: refused for now") {
				t.Errorf("notes %q; want the refusal for now", res.Notes)
			}
			if len(fs.files) != 0 {
				t.Errorf("files written %q; want none", fs.files)
			}
		})
	}
	agent, _ := fakeACP(t, "fs")
	agent.Permissions = PermAsk
	req := runRequest(t, agent, planV1)
	req.FS = &testFS{files: map[string]string{filepath.Join(req.Vault, "in.md"): "line 1\n"}}
	res := mustRun(t, &Runner{}, req)
	if want := "the user approved no edit of " + filepath.Join(req.Vault, "out.md"); res.Outcome != OutcomeOK || !strings.Contains(res.Reply, want) {
		t.Errorf("a write nobody approved: Run = %s %q reply %q; want it refused: %q", res.Outcome, res.Reason, res.Reply, want)
	}
}

// TestACP_AskReads: at permissions ask, a read (ACP kinds read, search,
// think) is allowed without a question; an edit with no Ask is refused.
func TestACP_AskReads(t *testing.T) {
	agent, _ := fakeACP(t, "permission")
	agent.Permissions = PermAsk
	a := &asker{answer: verdicts(question.Approve, question.Approve, "")}
	req := runRequest(t, agent, planV1)
	req.Ask = a.ask
	res := mustRun(t, &Runner{}, req)
	if res.Outcome != OutcomeOK || !strings.HasSuffix(res.Reply, "[permission: allow]") || len(a.calls) != 1 || a.calls[0].Tool != "Edit out.md" {
		t.Errorf("Run = %s %q reply %q, asked %+v; want the edit asked about and allowed", res.Outcome, res.Reason, res.Reply, a.calls)
	}
	for _, kind := range []string{"read", "search", "think"} {
		opt, ok := acpPermit(PermAsk, acpPermissionRequest{Options: []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		}{{"yes", "allow_once"}, {"no", "reject_once"}}, ToolCall: struct {
			Title string `json:"title"`
			Kind  string `json:"kind"`
		}{"Read a.md", kind}})
		if !ok || opt != "yes" || !readKind(kind) {
			t.Errorf("kind %s at ask: %q %v; want allowed", kind, opt, ok)
		}
	}
}

// TestACP_AskContinuing: a question nobody answered in time stays open;
// once the user approves the write (and denies the command), the run
// that continues resumes the agent's session with the answers in its
// Event Context and tells it what to do; the agent asks for the same
// write again (a new toolCallId: the same hash) and it is allowed by the
// answer, without asking, and written; the denied command is refused.
func TestACP_AskContinuing(t *testing.T) {
	agent, state := fakeACP(t, "ask")
	agent.Permissions, agent.AskWait = PermAsk, time.Second
	r := &Runner{}
	req := runRequest(t, agent, planV1)
	fs := &testFS{files: map[string]string{}}
	a := &asker{}
	req.FS, req.Ask = fs, a.ask
	first := mustRun(t, r, req)
	if first.Outcome != OutcomeOK || !strings.HasSuffix(first.Reply, "[write: reject] [command: reject]") || len(a.calls) != 2 {
		t.Fatalf("turn 1 = %s %q reply %q, asked %d; want ok with both calls refused for now", first.Outcome, first.Reason, first.Reply, len(a.calls))
	}
	write, command := a.calls[0], a.calls[1]
	approve := question.Answer{ID: question.NewID(req.RunID, write.Hash()), CallHash: write.Hash(), Verdict: question.Approve, From: question.FromNote}
	deny := question.Answer{ID: question.NewID(req.RunID, command.Hash()), CallHash: command.Hash(), Verdict: question.Deny, Why: "no shell", From: question.FromNote}

	next := req
	next.RunID, next.Turn, next.FiredBy = "01937f5e-7d1c-7a2b-9c3d-4e5f60718294", 2, FiredByAnswer
	next.Resume, next.Continuing, next.Answers = first.Resume, true, []question.Answer{approve, deny}
	b := &asker{}
	next.Ask = b.ask
	second := mustRun(t, r, next)
	if second.Outcome != OutcomeOK || !strings.HasSuffix(second.Reply, "[write: allow] [command: reject]") || len(b.calls) != 0 {
		t.Fatalf("turn 2 = %s %q reply %q, asked %+v; want ok, the write allowed by the approval and the command refused, nothing asked", second.Outcome, second.Reason, second.Reply, b.calls)
	}
	if got := fs.files[filepath.Join(req.Vault, "ask.txt")]; got != "approved text\n" {
		t.Errorf("ask.txt = %q; want the approved write", got)
	}
	for _, want := range []string{"Fired-By: answer\n", "Answer: " + approve.ID + " approved\n", "Answer: " + deny.ID + " denied: no shell" + "\n",
		"The user approved your request " + approve.ID + ". Do it now", "The user denied your request " + deny.ID + ": no shell. Do not do it"} {
		if !strings.Contains(second.Prompt, want) {
			t.Errorf("turn 2's prompt lacks %q:\n%s", want, second.Prompt)
		}
	}
	if strings.Contains(second.Prompt, "Changes:") || strings.Contains(second.Prompt, "buy milk") {
		t.Errorf("turn 2's prompt repeats what the conversation holds:\n%s", second.Prompt)
	}
	if got := acpMethods(t, state); !slices.Contains(got, "session/resume") {
		t.Errorf("the agent received %q; want its session resumed", got)
	}
}

// TestACP_AskAgentEndsTurn: an agent that ends its turn when a call is
// refused (Codex's adapter) fails the run, saying whether the question
// stays open or the user denied the call.
func TestACP_AskAgentEndsTurn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(question.Call) (question.Answer, bool)
		reason string
	}{
		{"unanswered", nil, "the agent ended its turn when knotd refused a call the user has not answered yet (permissions ask): the question stays open in the tie-off"},
		{"denied", verdicts(question.Deny, question.Deny, "no"), "the agent ended its turn when knotd refused a call the user denied (permissions ask)"},
		{"approved", verdicts(question.Approve, question.Approve, ""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent, _ := fakeACP(t, "askend")
			agent.Permissions, agent.AskWait = PermAsk, time.Second
			req := runRequest(t, agent, planV1)
			req.FS = &testFS{files: map[string]string{}}
			a := &asker{answer: tc.answer}
			req.Ask = a.ask
			res := mustRun(t, &Runner{}, req)
			switch {
			case tc.reason == "" && res.Outcome != OutcomeOK:
				t.Errorf("Run = %s %q; want ok", res.Outcome, res.Reason)
			case tc.reason != "" && (res.Outcome == OutcomeOK || !strings.Contains(res.Reason, tc.reason)):
				t.Errorf("Run = %s %q; want a failure: %q", res.Outcome, res.Reason, tc.reason)
			}
		})
	}
}

// TestACP_HeldCallBindsEverything: what an approval is bound to holds all
// of what the call would do. A command without rawInput (Gemini CLI's) is
// bound to its whole title, not the first line the question names it by,
// and the question shows every line of it.
func TestACP_HeldCallBindsEverything(t *testing.T) {
	c := &acpConversation{cwd: t.TempDir()}
	execute := acp.ToolKindExecute
	call := func(title string) question.Call {
		return c.heldCall(acp.ToolCallUpdate{ToolCallId: "t1", Title: &title, Kind: &execute}, "")
	}
	short, long := call("ls -la"), call("ls -la\nrm -rf ~/important")
	if short.Hash() == long.Hash() {
		t.Fatalf("a command and the same first line with more after it hash the same (%s)", short.Hash())
	}
	if !strings.Contains(long.Command, "rm -rf ~/important") {
		t.Errorf("the question's command %q hides a line of what runs", long.Command)
	}
	a, b := call(strings.Repeat("x", 210)+"1"), call(strings.Repeat("x", 210)+"2")
	if a.Hash() == b.Hash() {
		t.Error("two commands that differ after 200 bytes hash the same")
	}
	if again := call("ls -la"); again.Hash() != short.Hash() {
		t.Error("the same command asked again hashes differently")
	}
}

// TestACP_WriteIsTheApprovedEdit: at permissions ask, a write through
// knotd's file system must be the edit the user approved: a file of no
// approved edit is refused, and so is other text for an approved file.
func TestACP_WriteIsTheApprovedEdit(t *testing.T) {
	c := &acpConversation{}
	text := "the approved text\n"
	c.approved = map[string]approvedEdit{"/v/a.md": {text: &text}, "/v/b.md": {}}
	for _, tt := range []struct {
		path, content string
		ok            bool
	}{
		{"/v/a.md", text, true},
		{"/v/./a.md", text, true},
		{"/v/a.md", "something else\n", false},
		{"/v/b.md", "anything\n", true}, // approved without a diff: the path only
		{"/v/c.md", text, false},
	} {
		if err := c.writeApproved(tt.path, tt.content); (err == nil) != tt.ok {
			t.Errorf("writeApproved(%s, %q) = %v; want allowed %v", tt.path, tt.content, err, tt.ok)
		}
	}
}
