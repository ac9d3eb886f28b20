package claude_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
)

// These tests drive the real Claude Code CLI (claudetest.ClaudeCLI) through
// the claude preset against a loopback stand-in for the Anthropic API.

// realClaude runs the real CLI against the stand-in with a throwaway home.
type realClaude struct {
	api *claudetest.Server
	realcli.CLI[claudetest.Request]
}

func newRealClaude(t *testing.T) *realClaude {
	t.Helper()
	bin := claudetest.ClaudeCLI(t)
	api := claudetest.NewAnthropic(t)
	rc := &realClaude{api: api, CLI: realcli.New(agentrun.PresetClaude, bin, api.ClaudeEnv(t.TempDir()), api.MessageRequests)}
	rc.Runner.NewSessionID = realcli.FreshSessionIDs()
	return rc
}

// assistantTexts returns the text of the assistant messages of a call.
func assistantTexts(call claudetest.Request) []string {
	var texts []string
	for _, m := range call.Messages {
		if m.Role == "assistant" {
			texts = append(texts, m.Text())
		}
	}
	return texts
}

func TestClaude_RealCLIConversation(t *testing.T) {
	rc := newRealClaude(t)
	rc.Agent.Model = "sonnet"
	rc.Agent.Instructions = "- Answer in one sentence.\n- Never edit files."
	vault := t.TempDir()
	bin := rc.Agent.Command[0]

	req1 := rc.FirstTurn(vault)
	req1.Agent = rc.Agent
	res1, calls := rc.Run(t, req1)
	wantArgv := []string{bin, "-p", "--output-format", "stream-json", "--verbose", "--setting-sources", "user", "--permission-mode", "dontAsk", "--session-id", realcli.Session,
		"--model", "sonnet", "--append-system-prompt=" + rc.Agent.Instructions}
	if !slices.Equal(res1.Argv, wantArgv) {
		t.Errorf("turn 1 argv = %q; want %q", res1.Argv, wantArgv)
	}
	if res1.Reply != "MOCK REPLY (user messages seen: 1)" || res1.Resume != realcli.Session || res1.Restarted != nil {
		t.Errorf("turn 1 reply %q resume %q restarted %+v; want the mock reply and resume handle %s",
			res1.Reply, res1.Resume, res1.Restarted, realcli.Session)
	}
	if u := res1.Usage; u == nil || u.InputTokens != 10 || u.OutputTokens != 8 || u.CostUSD <= 0 {
		t.Errorf("turn 1 usage = %+v; want 10 in, 8 out and a cost", u)
	}
	call1 := realcli.MustOneCall(t, 1, calls)
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
	if !strings.Contains(call1.System, rc.Agent.Instructions) {
		t.Errorf("turn 1: the instructions %q did not reach the system prompt", rc.Agent.Instructions)
	}
	if !strings.Contains(call1.Model, "sonnet") {
		t.Errorf("turn 1: the model asked for is %q; want a sonnet model", call1.Model)
	}

	req2 := realcli.NextTurn(req1, res1.Resume)
	res2, calls := rc.Run(t, req2)
	if i := slices.Index(res2.Argv, "--resume"); i < 0 || i+1 >= len(res2.Argv) || res2.Argv[i+1] != realcli.Session ||
		slices.Contains(res2.Argv, "--session-id") {
		t.Errorf("turn 2 argv = %q; want --resume %s and no --session-id", res2.Argv, realcli.Session)
	}
	if res2.Reply != "MOCK REPLY (user messages seen: 2)" || res2.Resume != realcli.Session || res2.Restarted != nil {
		t.Errorf("turn 2 reply %q resume %q restarted %+v; want the mock reply for 2 user messages in %s",
			res2.Reply, res2.Resume, res2.Restarted, realcli.Session)
	}
	call2 := realcli.MustOneCall(t, 2, calls)
	// The resumed conversation carries turn 1 to the model.
	if got, want := call2.UserPrompts(), []string{res1.Prompt, res2.Prompt}; !slices.Equal(got, want) {
		t.Errorf("turn 2: the model saw user prompts %q; want turn 1's and turn 2's prompts %q", got, want)
	}
	if got, want := assistantTexts(call2), []string{res1.Reply}; !slices.Equal(got, want) {
		t.Errorf("turn 2: the model saw assistant messages %q; want %q", got, want)
	}
	for _, want := range []string{
		"## Event Context\nEvent: Modified\nStrand: ideas/plan.md\n",
		"Session: " + realcli.Session + " (resumed)\nTurn: 2\n",
		"Changes:\n",
		"+- [ ] ask Sam\n",
	} {
		if !strings.Contains(res2.Prompt, want) {
			t.Errorf("turn 2 prompt lacks %q:\n%s", want, res2.Prompt)
		}
	}
	for _, r := range rc.api.Requests() {
		if r.Status != 200 {
			t.Errorf("the stand-in answered %s %s with %d", r.Method, r.Path, r.Status)
		}
	}
}

// TestClaude_RealCLIResumesAfterVaultMoved pins a fact about Claude Code
// 2.1.330: --resume finds a session by id in any directory of the same
// home, so a moved vault keeps its conversation.
func TestClaude_RealCLIResumesAfterVaultMoved(t *testing.T) {
	rc := newRealClaude(t)
	first := rc.FirstTurn(t.TempDir())
	res1, _ := rc.Run(t, first)

	req := realcli.NextTurn(first, res1.Resume)
	req.Vault = t.TempDir()
	req.Event.Strand.Abs = filepath.Join(req.Vault, "ideas", "plan.md")
	res, calls := rc.Run(t, req)
	if res.Restarted != nil || res.Resume != realcli.Session || res.Reply != "MOCK REPLY (user messages seen: 2)" {
		t.Errorf("after the move: restarted %+v, resume %q, reply %q; want the conversation %s resumed",
			res.Restarted, res.Resume, res.Reply, realcli.Session)
	}
	call := realcli.MustOneCall(t, req.Turn, calls)
	if got, want := call.UserPrompts(), []string{res1.Prompt, res.Prompt}; !slices.Equal(got, want) {
		t.Errorf("after the move, the model saw user prompts %q; want %q", got, want)
	}
}

func TestClaude_RealCLIRecoversLostSession(t *testing.T) {
	const fresh = "33333333-2222-4333-8444-000000000001"
	tests := []struct {
		name string
		// second returns the runner and request of the turn after first
		// whose session Claude refuses.
		second     func(t *testing.T, rc *realClaude, first agentrun.Request, res agentrun.Result) (*agentrun.Runner, agentrun.Request)
		wantReason string
	}{
		{
			// The vault is synced to another machine, whose Claude Code
			// has never seen the conversation.
			name: "resume handle unknown to this home",
			second: func(t *testing.T, rc *realClaude, first agentrun.Request, res agentrun.Result) (*agentrun.Runner, agentrun.Request) {
				other := *rc.Runner
				env := rc.api.ClaudeEnv(t.TempDir())
				other.Environ = func() []string { return env }
				return &other, realcli.NextTurn(first, res.Resume)
			},
			wantReason: "No conversation found with session ID: " + realcli.Session,
		},
		{
			name: "handle lost: session id already in use",
			second: func(t *testing.T, rc *realClaude, first agentrun.Request, _ agentrun.Result) (*agentrun.Runner, agentrun.Request) {
				return rc.Runner, realcli.NextTurn(first, "")
			},
			wantReason: "Error: Session ID " + realcli.Session + " is already in use.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newRealClaude(t)
			first := rc.FirstTurn(t.TempDir())
			res1, _ := rc.Run(t, first)

			runner, req := tt.second(t, rc, first, res1)
			rc.Runner = runner
			res, calls := rc.Run(t, req)
			if res.Restarted == nil || res.Restarted.Handle != realcli.Session || res.Restarted.Reason != tt.wantReason {
				t.Errorf("Restarted = %+v; want handle %s, reason %q", res.Restarted, realcli.Session, tt.wantReason)
			}
			if res.Resume != fresh || res.Reply != "MOCK REPLY (user messages seen: 1)" {
				t.Errorf("reply %q resume %q; want the mock reply for 1 user message in fresh session %s", res.Reply, res.Resume, fresh)
			}
			if n := len(res.Argv); n < 2 || res.Argv[n-2] != "--session-id" || res.Argv[n-1] != fresh {
				t.Errorf("argv of the second attempt = %q; want it to end with --session-id %s", res.Argv, fresh)
			}
			// The refused attempt never reached the model; the fresh session
			// holds only this turn, and its Event Context says what happened.
			call := realcli.MustOneCall(t, req.Turn, calls)
			if got := call.UserPrompts(); !slices.Equal(got, []string{res.Prompt}) {
				t.Errorf("the model saw user prompts %q; want only this run's prompt %q", got, res.Prompt)
			}
			wantLine := "Session: " + realcli.Session + " (new; conversation " + realcli.Session +
				" could not be continued: " + tt.wantReason + ")\n"
			if !strings.Contains(res.Prompt, wantLine) {
				t.Errorf("the prompt does not say the session was restarted (%q):\n%s", wantLine, res.Prompt)
			}
			if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "a fresh one was started") }) {
				t.Errorf("Notes = %q; want one saying a fresh conversation was started", res.Notes)
			}
		})
	}
}

func TestClaude_RealCLIPermissions(t *testing.T) {
	for _, c := range realcli.PermCases {
		t.Run(c.Name, func(t *testing.T) {
			rc := newRealClaude(t)
			realcli.RunPermCase(t, c, &rc.CLI,
				func(req agentrun.Request, res agentrun.Result) agentrun.Request {
					return realcli.NextTurn(req, res.Resume)
				},
				func(n int, target string) string {
					write := agenttest.ToolCall{ID: fmt.Sprintf("toolu_turn%d", n), Name: "Write",
						Input: map[string]string{"file_path": target, "content": realcli.PermContent}}
					rc.api.SetAnswer(agenttest.CallTool[claudetest.Request](write, realcli.Finished))
					return write.ID
				},
				func(n int, turn realcli.PermTurn, target string, res agentrun.Result, result *agenttest.ToolResult) {
					// Claude Code marks a refused tool use is_error and
					// says it was denied: "Permission to use Write has been
					// denied because Claude Code is running in don't ask
					// mode", or, with --permission-prompts none,
					// "Permission for this tool use was denied".
					realcli.CheckWrite(t, n, target, turn.Written, res, result, []string{"denied"})
					if result != nil && result.IsError == turn.Written {
						t.Errorf("turn %d: tool result is_error %t; want %t", n, result.IsError, !turn.Written)
					}
				})
		})
	}
}

// TestClaude_RealCLIFullAsRoot: Claude Code 2.1.330 refuses to bypass
// permissions as root without IS_SANDBOX=1, and the run's reason says what
// to do about it.
func TestClaude_RealCLIFullAsRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs only as root: Claude Code refuses bypassPermissions to root alone")
	}
	rc := newRealClaude(t)
	req := rc.FirstTurn(t.TempDir())
	req.Agent.Permissions = agentrun.PermFull
	res, err := rc.Runner.Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agentrun.OutcomeFailed {
		t.Fatalf("outcome %s %q; want failed", res.Outcome, res.Reason)
	}
	for _, want := range []string{"cannot be used with root/sudo privileges", "IS_SANDBOX", "permissions: edit"} {
		if !strings.Contains(res.Reason, want) {
			t.Errorf("Reason = %q; want it to mention %q", res.Reason, want)
		}
	}
	if n := len(rc.api.MessageRequests()); n != 0 {
		t.Errorf("the refused run made %d model calls; want none", n)
	}
}

// TestClaude_RealCLIResumedTurnInstructions pins what Claude Code 2.1.330
// sends on a resumed turn whose instructions changed: the system prompt it
// recorded on the conversation's first request (--system-prompt-snapshot
// on, its default), with the first turn's instructions; the permission
// mode, by contrast, is the launch's (TestClaude_RealCLIPermissions).
func TestClaude_RealCLIResumedTurnInstructions(t *testing.T) {
	rc := newRealClaude(t)
	req := rc.FirstTurn(t.TempDir())
	req.Agent.Instructions = "FIRST INSTRUCTIONS"
	res, _ := rc.Run(t, req)

	req = realcli.NextTurn(req, res.Resume)
	req.Agent.Instructions = "CHANGED INSTRUCTIONS"
	_, calls := rc.Run(t, req)
	call := realcli.MustOneCall(t, 2, calls)
	if !strings.Contains(call.System, "FIRST INSTRUCTIONS") || strings.Contains(call.System, "CHANGED INSTRUCTIONS") {
		t.Errorf("the resumed turn's system prompt has the first instructions %t, the changed ones %t; want the first only",
			strings.Contains(call.System, "FIRST INSTRUCTIONS"), strings.Contains(call.System, "CHANGED INSTRUCTIONS"))
	}
}

// TestClaude_RealCLIIgnoresVaultSettings: a .claude/ settings folder in
// the vault (synced from another device, dropped by someone who can write
// to the vault) that allows Write does not let a read-only agent write:
// knotd has Claude Code read the user's settings only.
func TestClaude_RealCLIIgnoresVaultSettings(t *testing.T) {
	rc := newRealClaude(t)
	vault := t.TempDir()
	settings := `{"permissions":{"allow":["Write","Edit","Bash"],"defaultMode":"bypassPermissions"}}` + "\n"
	for _, name := range []string{"settings.json", "settings.local.json"} {
		p := filepath.Join(vault, ".claude", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(settings), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(vault, "planted.md")
	write := agenttest.ToolCall{ID: "toolu_planted", Name: "Write",
		Input: map[string]string{"file_path": target, "content": realcli.PermContent}}
	rc.api.SetAnswer(agenttest.CallTool[claudetest.Request](write, realcli.Finished))
	req := rc.FirstTurn(vault)
	req.Agent = rc.Agent
	res, calls := rc.Run(t, req)
	realcli.CheckWrite(t, 1, target, false, res, realcli.ResultOf(calls, write.ID), []string{"denied"})
}

// TestClaude_RealCLIResumedTurnGetsTheChange: a turn that continues the
// conversation which answered the previous version (Request.Continues)
// sends the real CLI the change, not the 6 KB note again, and the model
// still has turn 1 (the stand-in sees both turns' prompts). The context
// size the CLI reports is read from its last assistant message; past
// max_context, the next turn starts a new conversation with the whole
// note and says why.
func TestClaude_RealCLIResumedTurnGetsTheChange(t *testing.T) {
	rc := newRealClaude(t)
	var note strings.Builder
	note.WriteString("# Meeting\n\n")
	for i := range 85 {
		fmt.Fprintf(&note, "- point %02d of the meeting, with enough words to make a real line of notes\n", i)
	}
	req1 := rc.FirstTurn(t.TempDir())
	req1.Event.Strand.Content = []byte(note.String())
	res1, _ := rc.Run(t, req1)
	if res1.ContextTokens <= 0 {
		t.Errorf("turn 1 context = %d tokens; want the last assistant message's input", res1.ContextTokens)
	}

	req2 := realcli.NextTurn(req1, res1.Resume)
	req2.Event.Strand.Content = []byte(note.String() + "- a new point\n")
	req2.Continues, req2.LastContext = true, res1.ContextTokens
	res2, calls := rc.Run(t, req2)
	call2 := realcli.MustOneCall(t, 2, calls)
	prompts := call2.UserPrompts()
	if len(prompts) != 2 || prompts[0] != res1.Prompt || prompts[1] != res2.Prompt {
		t.Fatalf("turn 2: the model saw user prompts %q; want turn 1's and turn 2's", prompts)
	}
	for _, want := range []string{"Session: " + realcli.Session + " (resumed)\n", "Context: the change since your last answer\n", "\n+- a new point\n", "Previous tie-off:\n"} {
		if !strings.Contains(prompts[1], want) {
			t.Errorf("turn 2's prompt, as the model got it, lacks %q:\n%s", want, prompts[1])
		}
	}
	if strings.Contains(prompts[1], "- point 07 of the meeting") {
		t.Errorf("turn 2's prompt repeats the note:\n%s", prompts[1])
	}
	t.Logf("prompt sizes: turn 1 %d bytes, turn 2 %d (note %d bytes)", len(res1.Prompt), len(res2.Prompt), note.Len())

	rc.Agent.MaxContext = agentrun.ContextLimit(res2.ContextTokens - 1)
	req3 := realcli.NextTurn(req2, res2.Resume)
	req3.Agent = rc.Agent
	req3.Previous = req2.Event.Strand.Content
	req3.Event.Strand.Content = []byte(string(req3.Previous) + "- one more\n")
	req3.Continues, req3.LastContext = true, res2.ContextTokens
	res3, calls := rc.Run(t, req3)
	call3 := realcli.MustOneCall(t, 3, calls)
	if slices.Contains(res3.Argv, "--resume") || !slices.Contains(res3.Argv, "--session-id") {
		t.Errorf("turn 3 argv %q; want a new conversation", res3.Argv)
	}
	why := fmt.Sprintf("Context: the whole note (a new conversation: the last one used %d tokens, past max_context %d)\n", res2.ContextTokens, res2.ContextTokens-1)
	if got := call3.UserPrompts(); len(got) != 1 || !strings.Contains(got[0], why) || !strings.Contains(got[0], "- point 07 of the meeting") {
		t.Errorf("turn 3: the model saw user prompts %q; want one, the whole note, saying %q", got, why)
	}
	if !slices.ContainsFunc(res3.Notes, func(n string) bool { return strings.Contains(n, "started a new conversation") }) {
		t.Errorf("turn 3 notes %q; want why a new conversation started", res3.Notes)
	}
}
