package agentrun_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/agentrun/agenttest"
	"github.com/knotd/knotd/strand"
)

// These tests drive the real Gemini CLI (agenttest.GeminiCLI) through the
// gemini preset against a loopback stand-in for the Gemini API, with a
// throwaway home (agenttest.GeminiServer.GeminiEnv). A run takes 2–3 s.

// realGemini is the setup shared by the tests: the stand-in, the CLI's
// home, and a Runner and agent that run the real CLI against it.
type realGemini struct {
	api    *agenttest.GeminiServer
	home   string
	runner *agentrun.Runner
	agent  agentrun.Agent
}

// newRealGemini sets up a realGemini; trust sets
// GEMINI_CLI_TRUST_WORKSPACE=true.
func newRealGemini(t *testing.T, trust bool) *realGemini {
	t.Helper()
	bin := agenttest.GeminiCLI(t)
	api := agenttest.NewGemini(t)
	home := t.TempDir()
	env := api.GeminiEnv(home, trust)
	fresh := 0
	return &realGemini{
		api:  api,
		home: home,
		runner: &agentrun.Runner{
			Environ: func() []string { return env },
			NewSessionID: func() string {
				fresh++
				return fmt.Sprintf("33333333-2222-4333-8444-%012d", fresh)
			},
		},
		agent: agentrun.Agent{
			Name:    "gemini",
			Preset:  agentrun.PresetGemini,
			Command: []string{bin},
			Timeout: 2 * time.Minute,
		},
	}
}

// firstTurn is the request for a strand's first run in vault.
func (rg *realGemini) firstTurn(vault string) agentrun.Request {
	return agentrun.Request{
		RunID: "run-1",
		Vault: vault,
		Event: strand.Event{
			Type:   strand.Created,
			Strand: strand.Strand{Path: "ideas/plan.md", Abs: filepath.Join(vault, "ideas", "plan.md"), Content: []byte(realPlanV1)},
			Time:   time.Date(2026, 11, 21, 19, 30, 0, 0, time.UTC),
		},
		Session: realSession,
		Turn:    1,
		FiredBy: agentrun.FiredByWatch,
		Agent:   rg.agent,
		Now:     time.Date(2026, 11, 21, 19, 30, 5, 0, time.UTC),
	}
}

// try runs req and returns its result and the conversation's model calls
// the stand-in saw during the run, whatever the outcome.
func (rg *realGemini) try(t *testing.T, req agentrun.Request) (agentrun.Result, []agenttest.GeminiRequest) {
	t.Helper()
	before := len(rg.api.ChatRequests())
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := rg.runner.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run(turn %d) error: %v", req.Turn, err)
	}
	return res, rg.api.ChatRequests()[before:]
}

// run is try for a run that must succeed.
func (rg *realGemini) run(t *testing.T, req agentrun.Request) (agentrun.Result, []agenttest.GeminiRequest) {
	t.Helper()
	res, calls := rg.try(t, req)
	if res.Outcome != agentrun.OutcomeOK {
		t.Fatalf("Run(turn %d) = %s %q; want ok\nargv %q\nstdout %s\nstderr %s",
			req.Turn, res.Outcome, res.Reason, res.Argv, res.Stdout, res.Stderr)
	}
	return res, calls
}

// wipeChats removes Gemini CLI's stored conversations, as
// rm -rf $HOME/.gemini/tmp/*/chats does.
func (rg *realGemini) wipeChats(t *testing.T) {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(rg.home, ".gemini", "tmp", "*", "chats"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no chats directory to wipe under %s (err %v)", rg.home, err)
	}
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
}

// mustOneChat returns the only conversation call of a run.
func mustOneChat(t *testing.T, turn int, calls []agenttest.GeminiRequest) agenttest.GeminiRequest {
	t.Helper()
	if len(calls) != 1 {
		t.Fatalf("turn %d made %d conversation calls; want 1", turn, len(calls))
	}
	return calls[0]
}

// wantOnlyPrompts checks that the model saw exactly prompts, byte for
// byte, as the user turns of call.
func wantOnlyPrompts(t *testing.T, what string, call agenttest.GeminiRequest, want ...string) {
	t.Helper()
	if got := call.UserTexts(); !slices.Equal(got, want) {
		t.Errorf("%s: the model saw user turns %q; want %q", what, got, want)
	}
}

func TestGemini_RealCLIConversation(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, true)
	rg.agent.Instructions = "- Answer in one sentence.\n- Never edit files."
	vault := t.TempDir()
	bin := rg.agent.Command[0]

	req1 := rg.firstTurn(vault)
	req1.Agent = rg.agent
	res1, calls := rg.run(t, req1)
	wantArgv := []string{bin, "--output-format", "json", "--session-id", realSession}
	if !slices.Equal(res1.Argv, wantArgv) {
		t.Errorf("turn 1 argv = %q; want %q", res1.Argv, wantArgv)
	}
	if res1.Reply != "MOCK REPLY (user messages seen: 1)" || res1.Resume != realSession || res1.Restarted != nil {
		t.Errorf("turn 1 reply %q resume %q restarted %+v; want the mock reply and resume handle %s",
			res1.Reply, res1.Resume, res1.Restarted, realSession)
	}
	// The router's call and the conversation's: 100 prompt and 9 candidate
	// tokens each.
	if u := res1.Usage; u == nil || u.InputTokens != 200 || u.OutputTokens != 18 {
		t.Errorf("turn 1 usage = %+v; want 200 in, 18 out", u)
	}
	call1 := mustOneChat(t, 1, calls)
	wantOnlyPrompts(t, "turn 1", call1, res1.Prompt)
	for _, want := range []string{
		rg.agent.Instructions + "\n\n## Event Context\nEvent: Created\nStrand: ideas/plan.md\n",
		"Session: " + realSession + " (new)\nTurn: 1\nFired-By: watch\n",
		realPlanV1,
	} {
		if !strings.Contains(res1.Prompt, want) {
			t.Errorf("turn 1 prompt lacks %q:\n%s", want, res1.Prompt)
		}
	}

	req2 := realNextTurn(req1, res1.Resume)
	res2, calls := rg.run(t, req2)
	wantArgv = []string{bin, "--output-format", "json", "--resume", realSession}
	if !slices.Equal(res2.Argv, wantArgv) {
		t.Errorf("turn 2 argv = %q; want %q", res2.Argv, wantArgv)
	}
	if res2.Reply != "MOCK REPLY (user messages seen: 2)" || res2.Resume != realSession || res2.Restarted != nil {
		t.Errorf("turn 2 reply %q resume %q restarted %+v; want the mock reply for 2 user turns in %s",
			res2.Reply, res2.Resume, res2.Restarted, realSession)
	}
	call2 := mustOneChat(t, 2, calls)
	wantOnlyPrompts(t, "turn 2", call2, res1.Prompt, res2.Prompt)
	if !strings.Contains(res2.Prompt, "Session: "+realSession+" (resumed)\nTurn: 2\n") {
		t.Errorf("turn 2 prompt does not say the session was resumed:\n%s", res2.Prompt)
	}

	// The strand is deleted: the agent is told in the same conversation.
	req3 := realNextTurn(req2, res2.Resume)
	req3.Event.Type = strand.Deleted
	req3.Previous = req2.Event.Strand.Content
	req3.Event.Strand.Content = nil
	res3, calls := rg.run(t, req3)
	if res3.Reply != "MOCK REPLY (user messages seen: 3)" || res3.Resume != realSession || res3.Restarted != nil {
		t.Errorf("deleted turn reply %q resume %q restarted %+v; want the mock reply for 3 user turns in %s",
			res3.Reply, res3.Resume, res3.Restarted, realSession)
	}
	call3 := mustOneChat(t, 3, calls)
	wantOnlyPrompts(t, "deleted turn", call3, res1.Prompt, res2.Prompt, res3.Prompt)
	for _, want := range []string{"Event: Deleted\n", "The strand ideas/plan.md was deleted.", "- [ ] ask Sam\n"} {
		if !strings.Contains(res3.Prompt, want) {
			t.Errorf("deleted turn prompt lacks %q:\n%s", want, res3.Prompt)
		}
	}

	for _, r := range rg.api.Requests() {
		if r.Status != 200 {
			t.Errorf("the stand-in answered %s %s with %d", r.Method, r.Path, r.Status)
		}
	}
}

// TestGemini_RealCLIRecoversWipedChats: Gemini CLI 0.61.0 refuses to
// resume a session whose store is gone (exit 42, "Error resuming session:
// No previous sessions found for this project."); the preset starts a
// fresh session once and says so.
func TestGemini_RealCLIRecoversWipedChats(t *testing.T) {
	t.Parallel()
	const fresh = "33333333-2222-4333-8444-000000000001"
	rg := newRealGemini(t, true)
	first := rg.firstTurn(t.TempDir())
	res1, _ := rg.run(t, first)
	rg.wipeChats(t)

	req := realNextTurn(first, res1.Resume)
	res, calls := rg.run(t, req)
	wantReason := "Error resuming session: No previous sessions found for this project."
	if res.Restarted == nil || res.Restarted.Handle != realSession || res.Restarted.Reason != wantReason {
		t.Errorf("Restarted = %+v; want handle %s, reason %q", res.Restarted, realSession, wantReason)
	}
	if res.Resume != fresh || res.Reply != "MOCK REPLY (user messages seen: 1)" {
		t.Errorf("reply %q resume %q; want the mock reply for 1 user turn in fresh session %s", res.Reply, res.Resume, fresh)
	}
	if n := len(res.Argv); n < 2 || res.Argv[n-2] != "--session-id" || res.Argv[n-1] != fresh {
		t.Errorf("argv of the second attempt = %q; want it to end with --session-id %s", res.Argv, fresh)
	}
	call := mustOneChat(t, req.Turn, calls)
	wantOnlyPrompts(t, "after the wipe", call, res.Prompt)
	if !strings.Contains(res.Prompt, "could not be continued: "+wantReason+")\n") {
		t.Errorf("the prompt does not say the session was restarted:\n%s", res.Prompt)
	}
}

// TestGemini_RealCLIUntrustedFolder: without GEMINI_CLI_TRUST_WORKSPACE or
// a trustedFolders.json entry, Gemini CLI refuses to run headless (exit
// 55); the failure says how to trust the folder, and nothing reaches the
// API.
func TestGemini_RealCLIUntrustedFolder(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, false)
	res, _ := rg.try(t, rg.firstTurn(t.TempDir()))
	if res.Outcome != agentrun.OutcomeFailed || res.ExitCode != 55 {
		t.Fatalf("Run = %s (exit %d) %q; want failed with exit 55\nstderr %s", res.Outcome, res.ExitCode, res.Reason, res.Stderr)
	}
	for _, want := range []string{"does not trust the vault folder", "trustedFolders.json", "GEMINI_CLI_TRUST_WORKSPACE"} {
		if !strings.Contains(res.Reason, want) {
			t.Errorf("Reason %q lacks %q", res.Reason, want)
		}
	}
	if n := len(rg.api.Requests()); n != 0 {
		t.Errorf("the stand-in saw %d requests; want none", n)
	}
}

// TestGemini_RealCLIAuthError: a 401 fails the turn (exit 401 mod 256).
// Gemini CLI still names a session for it, but that session cannot be
// resumed: resuming it restarts, which is why the vault layer does not keep
// a failed turn's handle.
func TestGemini_RealCLIAuthError(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, true)
	rg.api.SetStatus(401)
	first := rg.firstTurn(t.TempDir())
	res, _ := rg.try(t, first)
	if res.Outcome != agentrun.OutcomeFailed || res.ExitCode != 401%256 {
		t.Fatalf("Run = %s (exit %d) %q; want failed with exit %d\nstderr %s", res.Outcome, res.ExitCode, res.Reason, 401%256, res.Stderr)
	}
	if !strings.Contains(res.Reason, "401") || !strings.Contains(res.Reason, "UNAUTHENTICATED") {
		t.Errorf("Reason = %q; want the API's 401 UNAUTHENTICATED", res.Reason)
	}
	if res.Resume == "" {
		t.Logf("the failed turn reported no session; nothing to resume")
		return
	}
	t.Logf("the failed turn reported session %s", res.Resume)
	rg.api.SetStatus(0)
	again, _ := rg.run(t, realNextTurn(first, res.Resume))
	if again.Restarted == nil || again.Restarted.Handle != res.Resume {
		t.Errorf("resuming the failed turn's session %s: Restarted = %+v; want it refused and a fresh session started",
			res.Resume, again.Restarted)
	}
}

// TestGemini_RealCLIServerErrorRetried: Gemini CLI retries a 500 with
// backoff (10 attempts over 257 s in the recording); one 500 costs one
// backoff and the turn succeeds.
func TestGemini_RealCLIServerErrorRetried(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, true)
	rg.api.FailNext(500, 1)
	res, _ := rg.run(t, rg.firstTurn(t.TempDir()))
	if res.Reply != "MOCK REPLY (user messages seen: 1)" {
		t.Errorf("reply %q; want the mock reply", res.Reply)
	}
	statuses := []int{}
	for _, r := range rg.api.Requests() {
		statuses = append(statuses, r.Status)
	}
	if len(statuses) < 2 || statuses[0] != 500 {
		t.Errorf("the stand-in answered %v; want a 500 first, then the retries", statuses)
	}
}

// TestGemini_RealCLIAtReferences documents what Gemini CLI 0.61.0 does to
// a prompt that holds "@" references, with no fix in knotd: there is none
// short of another protocol. Headless, it passes every prompt (standard
// input or -p alike) through its at-command processor
// (packages/cli/src/ui/hooks/atCommandProcessor.ts, handleAtCommand, called
// unconditionally by runNonInteractive), which no flag or setting turns
// off:
//
//   - when no "@word" names a file in the workspace (found directly, or by
//     the glob search **/*word* unless
//     context.fileFiltering.enableRecursiveFileSearch is false), nor an MCP
//     resource or a subagent, the prompt goes to the model as it was, byte
//     for byte;
//   - when one does, the prompt is rebuilt (a space before every "@",
//     trimmed) and the named files' contents are appended after
//     "--- Content from referenced files ---": a note can make the agent
//     send any readable file of the vault to the model.
//
// "\@" is not matched, but the backslash stays in the text (seen with the
// real CLI), so escaping would not deliver the prompt verbatim either;
// @"notes/secret.txt" is not resolved, but that changes the note. Only ACP
// mode (gemini --acp, JSON-RPC on standard input and output) passes a text
// prompt through untouched: its session/prompt resolves resource_link
// blocks, never "@" in text (seen with the real CLI and this stand-in).
func TestGemini_RealCLIAtReferences(t *testing.T) {
	t.Parallel()
	const (
		note   = "# Mail\n\nMail me@example.com, and see @notes/secret.txt\n"
		secret = "TOP SECRET CONTENT 7f3a\n"
	)
	rg := newRealGemini(t, true)
	vault := t.TempDir()
	req := rg.firstTurn(vault)
	req.Event.Strand.Content = []byte(note)

	t.Run("no such file: verbatim", func(t *testing.T) {
		res, calls := rg.run(t, req)
		call := mustOneChat(t, 1, calls)
		wantOnlyPrompts(t, "no referenced file", call, res.Prompt)
	})

	t.Run("referenced file exists: rewritten, file sent", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(vault, "notes"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(vault, "notes", "secret.txt"), []byte(secret), 0o644); err != nil {
			t.Fatal(err)
		}
		req := req
		req.Session = "22222222-2222-4333-8444-555555555555"
		res, calls := rg.run(t, req)
		call := mustOneChat(t, 1, calls)
		got := strings.Join(call.UserTexts(), "\n")
		if strings.Contains(got, note) {
			t.Errorf("the note reached the model verbatim; Gemini CLI 0.61.0 was seen to rewrite it. Has @ processing changed? Then deliver verbatim and test it.\n%s", got)
		}
		for _, want := range []string{"Mail me @example.com, and see @notes/secret.txt", "--- Content from referenced files ---", strings.TrimSpace(secret)} {
			if !strings.Contains(got, want) {
				t.Errorf("the model's user turn lacks %q:\n%s", want, got)
			}
		}
		if strings.Contains(got, res.Prompt) {
			t.Errorf("the prompt reached the model verbatim")
		}
	})
}
