package codex_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
	"github.com/knotd/knotd/internal/agents/codex/codextest"
	"github.com/knotd/knotd/internal/strand"
)

// These tests drive the real Codex CLI (codextest.CodexCLI) through the
// codex preset against a loopback stand-in for the OpenAI Responses API,
// each with a throwaway CODEX_HOME.

// realCodex runs the real CLI against the stand-in with a throwaway
// CODEX_HOME, dir.
type realCodex struct {
	api *codextest.OpenAI
	dir string // the CodexEnv directory
	realcli.CLI[codextest.ResponsesRequest]
}

func newRealCodex(t *testing.T) *realCodex {
	t.Helper()
	bin := codextest.CodexCLI(t)
	api := codextest.NewOpenAI(t)
	dir := t.TempDir()
	return &realCodex{api: api, dir: dir, CLI: realcli.New(agentrun.PresetCodex, bin, api.CodexEnv(t, dir), api.ResponseRequests)}
}

// codexNextTurn turns req, which ran with result res, into the strand's
// next turn, resuming res's thread with its totals.
func codexNextTurn(req agentrun.Request, res agentrun.Result) agentrun.Request {
	req = realcli.NextTurn(req, res.Resume)
	req.TotalsBefore = res.Totals
	return req
}

// wantUsage checks a run's Usage and Totals.
func wantUsage(t *testing.T, turn int, res agentrun.Result, usage, totals agentrun.Usage) {
	t.Helper()
	if res.Usage == nil || *res.Usage != usage {
		t.Errorf("turn %d usage = %+v; want %+v", turn, res.Usage, usage)
	}
	if res.Totals == nil || *res.Totals != totals {
		t.Errorf("turn %d totals = %+v; want %+v", turn, res.Totals, totals)
	}
}

func TestCodex_RealCLIConversation(t *testing.T) {
	rc := newRealCodex(t)
	rc.Agent.Model = "gpt-5.5"
	rc.Agent.Instructions = "- Answer in one sentence.\n- Never edit \"files\"."
	vault := t.TempDir()
	bin := rc.Agent.Command[0]

	req1 := rc.FirstTurn(vault)
	res1, calls := rc.Run(t, req1)
	wantArgv := []string{bin, "exec", "--json", "--skip-git-repo-check", "-s", "read-only", "--model", "gpt-5.5",
		"-c", `developer_instructions="- Answer in one sentence.\n- Never edit \"files\"."`, "-"}
	if !slices.Equal(res1.Argv, wantArgv) {
		t.Errorf("turn 1 argv = %q; want %q", res1.Argv, wantArgv)
	}
	thread := res1.Resume
	if res1.Reply != "MOCK REPLY (user messages seen: 1)" || thread == "" || res1.Restarted != nil {
		t.Errorf("turn 1 reply %q resume %q restarted %+v; want the mock reply and a thread id",
			res1.Reply, thread, res1.Restarted)
	}
	wantUsage(t, 1, res1, agentrun.Usage{InputTokens: 100, OutputTokens: 9}, agentrun.Usage{InputTokens: 100, OutputTokens: 9})
	call1 := realcli.MustOneCall(t, 1, calls)
	if !call1.Stream || call1.Model != "gpt-5.5" {
		t.Errorf("turn 1: model call stream %v model %q; want a streamed call for gpt-5.5", call1.Stream, call1.Model)
	}
	// The Event Context block is the user's message, byte for byte.
	if got := call1.UserPrompts(); !slices.Equal(got, []string{res1.Prompt}) {
		t.Errorf("turn 1: the model saw user prompts %q; want the run's prompt %q", got, res1.Prompt)
	}
	for _, want := range []string{
		"## Event Context\nEvent: Created\nStrand: ideas/plan.md\nNow: 2026-11-21T19:30:05Z\n",
		"Session: " + realcli.Session + " (new)\nTurn: 1\nFired-By: watch\n",
		realcli.PlanV1,
	} {
		if !strings.Contains(res1.Prompt, want) {
			t.Errorf("turn 1 prompt lacks %q:\n%s", want, res1.Prompt)
		}
	}
	// developer_instructions arrive as a part of a developer message.
	if !slices.ContainsFunc(call1.Input, func(m agenttest.Message) bool {
		return m.Role == "developer" && slices.ContainsFunc(m.Content, func(b agenttest.Block) bool {
			return b.Type == "text" && b.Text == rc.Agent.Instructions
		})
	}) {
		t.Errorf("turn 1: no developer message part is the instructions %q; developer messages:\n%q",
			rc.Agent.Instructions, call1.Texts("developer"))
	}
	// Codex's thread id is a UUID, and its rollout is in CODEX_HOME.
	rollouts, _ := filepath.Glob(filepath.Join(codextest.CodexHome(rc.dir), "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	if len(rollouts) != 1 {
		t.Errorf("rollouts of thread %s in CODEX_HOME: %q; want one", thread, rollouts)
	}

	req2 := codexNextTurn(req1, res1)
	res2, calls := rc.Run(t, req2)
	if i := slices.Index(res2.Argv, "resume"); i < 0 || i+2 != len(res2.Argv)-1 || res2.Argv[i+1] != thread {
		t.Errorf("turn 2 argv = %q; want it to end with resume %s -", res2.Argv, thread)
	}
	if res2.Reply != "MOCK REPLY (user messages seen: 2)" || res2.Resume != thread || res2.Restarted != nil {
		t.Errorf("turn 2 reply %q resume %q restarted %+v; want the mock reply for 2 user turns in %s",
			res2.Reply, res2.Resume, res2.Restarted, thread)
	}
	// Codex reports the thread's running total (300 in, 18 out); the
	// run's own use is the difference from turn 1's.
	wantUsage(t, 2, res2, agentrun.Usage{InputTokens: 200, OutputTokens: 9}, agentrun.Usage{InputTokens: 300, OutputTokens: 18})
	call2 := realcli.MustOneCall(t, 2, calls)
	if got, want := call2.UserPrompts(), []string{res1.Prompt, res2.Prompt}; !slices.Equal(got, want) {
		t.Errorf("turn 2: the model saw user prompts %q; want turn 1's and turn 2's prompts %q", got, want)
	}
	if got, want := call2.Texts("assistant"), []string{res1.Reply}; !slices.Equal(got, want) {
		t.Errorf("turn 2: the model saw assistant messages %q; want %q", got, want)
	}
	for _, want := range []string{
		"## Event Context\nEvent: Modified\nStrand: ideas/plan.md\n",
		"Session: " + realcli.Session + " (resumed)\nTurn: 2\n",
		"+- [ ] ask Sam\n",
	} {
		if !strings.Contains(res2.Prompt, want) {
			t.Errorf("turn 2 prompt lacks %q:\n%s", want, res2.Prompt)
		}
	}

	// The note is deleted: a third turn in the same thread.
	req3 := codexNextTurn(req2, res2)
	req3.Event.Type = strand.Deleted
	req3.Previous, req3.Event.Strand.Content = req2.Event.Strand.Content, nil
	res3, calls := rc.Run(t, req3)
	if res3.Reply != "MOCK REPLY (user messages seen: 3)" || res3.Resume != thread || res3.Restarted != nil {
		t.Errorf("deleted turn reply %q resume %q restarted %+v; want the mock reply for 3 user turns in %s",
			res3.Reply, res3.Resume, res3.Restarted, thread)
	}
	wantUsage(t, 3, res3, agentrun.Usage{InputTokens: 300, OutputTokens: 9}, agentrun.Usage{InputTokens: 600, OutputTokens: 27})
	call3 := realcli.MustOneCall(t, 3, calls)
	if got, want := call3.UserPrompts(), []string{res1.Prompt, res2.Prompt, res3.Prompt}; !slices.Equal(got, want) {
		t.Errorf("deleted turn: the model saw user prompts %q; want %q", got, want)
	}
	if !strings.Contains(res3.Prompt, "Event: Deleted\nStrand: ideas/plan.md\n") {
		t.Errorf("deleted turn prompt does not say the strand was deleted:\n%s", res3.Prompt)
	}

	for _, r := range rc.api.Requests() {
		if r.Status != 200 || r.Method != "POST" || r.Path != "/v1/responses" {
			t.Errorf("the stand-in got %s %s and answered %d; want only POST /v1/responses answered 200", r.Method, r.Path, r.Status)
		}
	}
}

// TestCodex_RealCLIRecoversWipedSessions: with CODEX_HOME/sessions gone,
// codex refuses the thread ("no rollout found for thread id") and the run
// starts a fresh thread, once.
func TestCodex_RealCLIRecoversWipedSessions(t *testing.T) {
	rc := newRealCodex(t)
	first := rc.FirstTurn(t.TempDir())
	res1, _ := rc.Run(t, first)
	thread := res1.Resume

	if err := os.RemoveAll(filepath.Join(codextest.CodexHome(rc.dir), "sessions")); err != nil {
		t.Fatal(err)
	}
	req := codexNextTurn(first, res1)
	res, calls := rc.Run(t, req)
	wantReason := "no rollout found for thread id " + thread
	if res.Restarted == nil || res.Restarted.Handle != thread || !strings.HasPrefix(res.Restarted.Reason, wantReason) {
		t.Errorf("Restarted = %+v; want handle %s, reason %q…", res.Restarted, thread, wantReason)
	}
	if res.Resume == "" || res.Resume == thread || res.Reply != "MOCK REPLY (user messages seen: 1)" {
		t.Errorf("reply %q resume %q; want the mock reply for 1 user turn in a thread other than %s", res.Reply, res.Resume, thread)
	}
	if slices.Contains(res.Argv, "resume") {
		t.Errorf("argv of the second attempt = %q; want a new thread, no resume", res.Argv)
	}
	// The fresh thread's totals are the run's own.
	wantUsage(t, req.Turn, res, agentrun.Usage{InputTokens: 100, OutputTokens: 9}, agentrun.Usage{InputTokens: 100, OutputTokens: 9})
	// The refused attempt never reached the model; the fresh thread holds
	// only this turn, and its Event Context says what happened.
	call := realcli.MustOneCall(t, req.Turn, calls)
	if got := call.UserPrompts(); !slices.Equal(got, []string{res.Prompt}) {
		t.Errorf("the model saw user prompts %q; want only this run's prompt %q", got, res.Prompt)
	}
	wantLine := "Session: " + realcli.Session + " (new; conversation " + thread + " could not be continued: " + wantReason
	if !strings.Contains(res.Prompt, wantLine) {
		t.Errorf("the prompt does not say the conversation was restarted (%q):\n%s", wantLine, res.Prompt)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "a fresh one was started") }) {
		t.Errorf("Notes = %q; want one saying a fresh conversation was started", res.Notes)
	}

	// The fresh thread is a thread like any other: the next turn resumes it.
	next := codexNextTurn(req, res)
	res2, _ := rc.Run(t, next)
	if res2.Restarted != nil || res2.Resume != res.Resume || res2.Reply != "MOCK REPLY (user messages seen: 2)" {
		t.Errorf("after the restart: restarted %+v resume %q reply %q; want thread %s resumed",
			res2.Restarted, res2.Resume, res2.Reply, res.Resume)
	}
}

// TestCodex_RealCLIUnauthorized: a 401 fails the run with the API's
// message and starts no fresh thread. Codex 0.169.0 retries it five times
// first (about 7 s, exec-http-401).
func TestCodex_RealCLIUnauthorized(t *testing.T) {
	rc := newRealCodex(t)
	rc.api.SetStatus(401)
	res, calls := rc.Attempt(t, rc.FirstTurn(t.TempDir()))
	if res.Outcome != agentrun.OutcomeFailed || res.Restarted != nil {
		t.Fatalf("outcome %s restarted %+v reason %q; want failed, no restart", res.Outcome, res.Restarted, res.Reason)
	}
	for _, want := range []string{"401 Unauthorized", "Incorrect API key provided: dummy."} {
		if !strings.Contains(res.Reason, want) {
			t.Errorf("Reason = %q; want it to contain %q", res.Reason, want)
		}
	}
	if strings.Contains(res.Reason, "Reconnecting") {
		t.Errorf("Reason = %q; want the final error, not a retry notice", res.Reason)
	}
	if len(calls) == 0 {
		t.Errorf("the stand-in saw no model call")
	}
	for _, c := range calls {
		if c.Status != 401 {
			t.Errorf("a model call was answered %d; want 401", c.Status)
		}
	}
}

// TestCodex_RealCLIRetriesServerErrors: codex retries a 500 and the run
// succeeds when the API recovers; these first retries print no
// "Reconnecting" event (seen with 0.169.0; the recording's 30 requests for
// a lasting 500 look like 6 reported attempts of 5 requests each). A 500 that lasts makes codex 0.169.0
// retry for about 25 s before failing (exec-http-500), too slow to test
// here; the preset reads that failure's turn.failed the same way as the
// 401's.
func TestCodex_RealCLIRetriesServerErrors(t *testing.T) {
	rc := newRealCodex(t)
	rc.api.SetStatusTimes(500, 2)
	res, calls := rc.Run(t, rc.FirstTurn(t.TempDir()))
	if res.Reply != "MOCK REPLY (user messages seen: 1)" || res.Restarted != nil {
		t.Errorf("reply %q restarted %+v; want the mock reply, no restart", res.Reply, res.Restarted)
	}
	var statuses []int
	for _, c := range calls {
		statuses = append(statuses, c.Status)
	}
	if want := []int{500, 500, 200}; !slices.Equal(statuses, want) {
		t.Errorf("the stand-in answered %v; want %v", statuses, want)
	}
	wantUsage(t, 1, res, agentrun.Usage{InputTokens: 100, OutputTokens: 9}, agentrun.Usage{InputTokens: 100, OutputTokens: 9})
}

// TestCodex_RealCLIUnknownThread: a handle codex never had (another
// machine's thread) is refused and the run starts a fresh thread.
func TestCodex_RealCLIUnknownThread(t *testing.T) {
	const other = "11111111-2222-3333-4444-555555555555"
	rc := newRealCodex(t)
	req := realcli.NextTurn(rc.FirstTurn(t.TempDir()), other)
	req.TotalsBefore = &agentrun.Usage{InputTokens: 5000, OutputTokens: 500}
	res, calls := rc.Run(t, req)
	if res.Restarted == nil || res.Restarted.Handle != other ||
		!strings.HasPrefix(res.Restarted.Reason, "no rollout found for thread id "+other) {
		t.Errorf("Restarted = %+v; want handle %s refused with no rollout found", res.Restarted, other)
	}
	if res.Resume == "" || res.Resume == other || res.Reply != "MOCK REPLY (user messages seen: 1)" {
		t.Errorf("reply %q resume %q; want the mock reply in a fresh thread", res.Reply, res.Resume)
	}
	// TotalsBefore belonged to the lost thread: the fresh one's totals are the run's.
	wantUsage(t, req.Turn, res, agentrun.Usage{InputTokens: 100, OutputTokens: 9}, agentrun.Usage{InputTokens: 100, OutputTokens: 9})
	realcli.MustOneCall(t, req.Turn, calls)
}

// TestCodex_RealCLIResumedTurnAddsOnlyTheTurn pins that knotd's resumed
// turns make Codex CLI 0.169.0 re-send none of its own context: each
// request of a thread is the previous one's messages plus the previous
// reply and the new prompt. Codex's own messages (its model instructions,
// sent as the first developer message; the skills, permissions,
// collaboration-mode and multi-agent developer messages; the
// <environment_context> user message) are sent once, at the thread's
// start, and stay the same size whatever the number of turns. Codex adds a
// message on a resumed turn only for a setting that differs from the
// thread's last turn (TestCodex_RealCLIResumedTurnSandboxAndInstructions: a
// changed sandbox), so knotd gives every turn of a thread the same flags.
func TestCodex_RealCLIResumedTurnAddsOnlyTheTurn(t *testing.T) {
	tests := []struct {
		name  string
		agent func(*agentrun.Agent)
	}{
		{"defaults", func(*agentrun.Agent) {}},
		{"edit, a model and instructions", func(a *agentrun.Agent) {
			a.Permissions, a.Model, a.Instructions = agentrun.PermEdit, "gpt-5.5", "- Answer in one sentence."
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newRealCodex(t)
			tt.agent(&rc.Agent)
			// prevDay is the date (UTC, Codex's time zone here) before the
			// previous turn ran.
			prevDay := time.Now().UTC().Format(time.DateOnly)
			req := rc.FirstTurn(t.TempDir())
			res, calls := rc.Run(t, req)
			prev := realcli.MustOneCall(t, 1, calls)
			if len(codexOwnMessages(prev)) == 0 {
				t.Fatalf("turn 1: no developer message or context of Codex's own in %q", messageTexts(prev.Input))
			}
			for turn := 2; turn <= 4; turn++ {
				req = codexNextTurn(req, res)
				day := time.Now().UTC().Format(time.DateOnly)
				res, calls = rc.Run(t, req)
				call := realcli.MustOneCall(t, turn, calls)
				got := messageTexts(call.Input)
				if time.Now().UTC().Format(time.DateOnly) != prevDay {
					// Midnight passed since the previous turn: Codex tells
					// the model the new <current_date> in an
					// <environment_context> message, as it should.
					got = slices.DeleteFunc(got, func(m string) bool {
						return strings.HasPrefix(m, "user: <environment_context>") && !slices.Contains(messageTexts(prev.Input), m)
					})
				}
				want := append(slices.Clone(prev.Input),
					agenttest.Message{Role: "assistant", Content: []agenttest.Block{{Type: "text", Text: codextest.DefaultResponsesReply(prev)}}},
					agenttest.Message{Role: "user", Content: []agenttest.Block{{Type: "text", Text: res.Prompt}}})
				if !slices.Equal(got, messageTexts(want)) {
					t.Errorf("turn %d: the request's messages are not turn %d's plus its reply and this prompt; added:\n%q",
						turn, turn-1, addedMessages(messageTexts(prev.Input), got))
				}
				prev, prevDay = call, day
			}
		})
	}
}

// messageTexts returns "role: text" for each message.
func messageTexts(ms []agenttest.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Role + ": " + m.Text()
	}
	return out
}

// addedMessages returns the messages of got past the common prefix with
// before, each cut to 120 characters, for a failure message.
func addedMessages(before, got []string) []string {
	i := 0
	for i < len(before) && i < len(got) && before[i] == got[i] {
		i++
	}
	var out []string
	for _, s := range got[i:] {
		if len(s) > 120 {
			s = s[:120] + "…"
		}
		out = append(out, s)
	}
	return out
}

// codexOwnMessages returns "role: first 40 characters" of each message of r
// that is Codex's own: a developer message, or a user message Codex added
// (r.UserPrompts leaves those out).
func codexOwnMessages(r codextest.ResponsesRequest) []string {
	prompts := r.UserPrompts()
	var out []string
	for _, m := range r.Input {
		text := m.Text()
		if m.Role == "assistant" || m.Role == "user" && slices.Contains(prompts, text) {
			continue
		}
		if len(text) > 40 {
			text = text[:40]
		}
		out = append(out, m.Role+": "+text)
	}
	return out
}
