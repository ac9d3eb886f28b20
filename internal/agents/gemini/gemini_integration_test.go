package gemini_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
	"github.com/knotd/knotd/internal/agents/gemini/geminitest"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
)

// These tests drive the real Gemini CLI (geminitest.GeminiCLI) through the
// gemini preset against a loopback stand-in for the Gemini API, with a
// throwaway home (geminitest.GeminiServer.GeminiEnv). A run takes 2–3 s.

// realGemini runs the real CLI against the stand-in with a throwaway
// home.
type realGemini struct {
	api  *geminitest.GeminiServer
	home string
	aged int // calls of ageChats
	realcli.CLI[geminitest.GeminiRequest]
}

// newRealGemini sets up a realGemini; trust sets
// GEMINI_CLI_TRUST_WORKSPACE=true.
func newRealGemini(t *testing.T, trust bool) *realGemini {
	t.Helper()
	bin := geminitest.GeminiCLI(t)
	api := geminitest.NewGemini(t)
	home := t.TempDir()
	rg := &realGemini{api: api, home: home, CLI: realcli.New(agentrun.PresetGemini, bin, api.GeminiEnv(home, trust), api.ChatRequests)}
	rg.Runner.NewSessionID = realcli.FreshSessionIDs()
	return rg
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

// wantOnlyPrompts checks that the model saw exactly prompts, byte for
// byte, as the user turns of call.
func wantOnlyPrompts(t *testing.T, what string, call geminitest.GeminiRequest, want ...string) {
	t.Helper()
	if got := call.UserTexts(); !slices.Equal(got, want) {
		t.Errorf("%s: the model saw user turns %q; want %q", what, got, want)
	}
}

// ageChats renames Gemini CLI's stored conversations as if they had been
// written in another minute. Gemini CLI 0.61.0 names a conversation's file
// after the minute it was started in and the session id's first 8
// characters (chats/session-2026-11-23T19-33-c924c493.jsonl), and
// session/load starts a new file for the id it is given before it reads
// the session: for the plain id, loaded in the minute the conversation was
// started, that is the conversation's file, which is reset (the preset
// loads the id with a leading space: see loadID (preset.go) and
// TestGemini_RealCLITurnsWithinAMinute). The tests' turns come seconds
// apart, a vault's usually minutes; ageChats stands for the wait, without
// one.
func (rg *realGemini) ageChats(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(rg.home, ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no conversation files under %s (err %v)", rg.home, err)
	}
	rg.aged++ // a name no earlier call gave
	for _, f := range files {
		aged := filepath.Join(filepath.Dir(f), fmt.Sprintf("session-aged%d-%s", rg.aged, strings.TrimPrefix(filepath.Base(f), "session-")))
		if err := os.Rename(f, aged); err != nil {
			t.Fatal(err)
		}
	}
}

// wantArgv checks a run's command line: the preset's, with no flag that
// trusts the folder or approves tools.
func wantArgv(t *testing.T, res agentrun.Result, bin string) {
	t.Helper()
	if want := []string{bin, "--acp", "--approval-mode", "default"}; !slices.Equal(res.Argv, want) {
		t.Errorf("argv = %q; want %q", res.Argv, want)
	}
}

// keepSessions turns off Gemini CLI's session retention in the CLI's
// settings (general.sessionRetention.enabled false), as a user may have
// it: see TestGemini_RealCLIRetentionKeepsLoadedSessions for the default.
func (rg *realGemini) keepSessions(t *testing.T) {
	t.Helper()
	const settings = `{
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false, "sessionRetention": { "enabled": false } },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false }
}
`
	if err := os.WriteFile(filepath.Join(rg.home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGemini_RealCLIConversation(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, true)
	rg.keepSessions(t)
	rg.Agent.Instructions = "- Answer in one sentence.\n- Never edit files."
	vault := t.TempDir()
	bin := rg.Agent.Command[0]

	req1 := rg.FirstTurn(vault)
	req1.Agent = rg.Agent
	res1, calls := rg.Run(t, req1)
	wantArgv(t, res1, bin)
	if res1.Reply != "MOCK REPLY (user messages seen: 1)" || res1.Resume == "" || res1.Restarted != nil {
		t.Errorf("turn 1 reply %q resume %q restarted %+v; want the mock reply and Gemini CLI's session id",
			res1.Reply, res1.Resume, res1.Restarted)
	}
	// The conversation's call only: 100 prompt and 9 candidate tokens (the
	// routing classifier's call is not counted in ACP mode).
	if u := res1.Usage; u == nil || *u != (agentrun.Usage{InputTokens: 100, OutputTokens: 9}) {
		t.Errorf("turn 1 usage = %+v; want 100 in, 9 out", u)
	}
	call1 := realcli.MustOneCall(t, 1, calls)
	wantOnlyPrompts(t, "turn 1", call1, res1.Prompt)
	for _, want := range []string{
		rg.Agent.Instructions + "\n\n## Event Context\nEvent: Created\nStrand: ideas/plan.md\n",
		"Session: " + realcli.Session + " (new)\nTurn: 1\nFired-By: watch\n",
		realcli.PlanV1,
	} {
		if !strings.Contains(res1.Prompt, want) {
			t.Errorf("turn 1 prompt lacks %q:\n%s", want, res1.Prompt)
		}
	}
	if !bytes.Contains(res1.Stdout, []byte(`"method":"session/update"`)) {
		t.Errorf("the output kept is not the CLI's ACP messages:\n%s", res1.Stdout)
	}

	rg.ageChats(t)
	req2 := realcli.NextTurn(req1, res1.Resume)
	res2, calls := rg.Run(t, req2)
	wantArgv(t, res2, bin)
	if res2.Reply != "MOCK REPLY (user messages seen: 2)" || res2.Resume != res1.Resume || res2.Restarted != nil {
		t.Errorf("turn 2 reply %q resume %q restarted %+v; want the mock reply for 2 user turns in %s",
			res2.Reply, res2.Resume, res2.Restarted, res1.Resume)
	}
	if u := res2.Usage; u == nil || *u != (agentrun.Usage{InputTokens: 200, OutputTokens: 9}) {
		t.Errorf("turn 2 usage = %+v; want 200 in (the whole conversation is the turn's prompt), 9 out", u)
	}
	call2 := realcli.MustOneCall(t, 2, calls)
	wantOnlyPrompts(t, "turn 2", call2, res1.Prompt, res2.Prompt)
	if !strings.Contains(res2.Prompt, "Session: "+realcli.Session+" (resumed)\nTurn: 2\n") {
		t.Errorf("turn 2 prompt does not say the session was resumed:\n%s", res2.Prompt)
	}

	// The strand is deleted: the agent is told in the same conversation.
	rg.ageChats(t)
	req3 := realcli.NextTurn(req2, res2.Resume)
	req3.Event.Type = strand.Deleted
	req3.Previous = req2.Event.Strand.Content
	req3.Event.Strand.Content = nil
	res3, calls := rg.Run(t, req3)
	if res3.Reply != "MOCK REPLY (user messages seen: 3)" || res3.Resume != res1.Resume || res3.Restarted != nil {
		t.Errorf("deleted turn reply %q resume %q restarted %+v; want the mock reply for 3 user turns in %s",
			res3.Reply, res3.Resume, res3.Restarted, res1.Resume)
	}
	call3 := realcli.MustOneCall(t, 3, calls)
	wantOnlyPrompts(t, "deleted turn", call3, res1.Prompt, res2.Prompt, res3.Prompt)

	for _, r := range rg.api.Requests() {
		if r.Status != 200 {
			t.Errorf("the stand-in answered %s %s with %d", r.Method, r.Path, r.Status)
		}
	}
}

// TestGemini_RealCLIRetentionKeepsLoadedSessions: with Gemini CLI
// 0.61.0's default settings (general.sessionRetention on) a conversation
// goes on turn after turn. A session/load of the plain session id leaves a
// second file of the session's short id that holds only the session
// context; at its next start the CLI's retention cleanup takes that file
// for a corrupt session and deletes every file of the short id, the
// conversation's included, so the third turn started afresh. The preset
// loads the id with a leading space (loadID, preset.go), and the file the load
// leaves has no short id in its name: the cleanup deletes it alone.
func TestGemini_RealCLIRetentionKeepsLoadedSessions(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, true)
	req := rg.FirstTurn(t.TempDir())
	res1, _ := rg.Run(t, req)
	res := res1
	for turn := 2; turn <= 4; turn++ {
		rg.ageChats(t)
		req = realcli.NextTurn(req, res.Resume)
		var calls []geminitest.GeminiRequest
		res, calls = rg.Run(t, req)
		if want := fmt.Sprintf("MOCK REPLY (user messages seen: %d)", turn); res.Restarted != nil || res.Resume != res1.Resume || res.Reply != want {
			t.Fatalf("turn %d: reply %q, resume %q, restarted %+v; want %q in %s",
				turn, res.Reply, res.Resume, res.Restarted, want, res1.Resume)
		}
		if got := realcli.MustOneCall(t, turn, calls).UserTexts(); len(got) != turn {
			t.Errorf("turn %d: the model saw %d user turns; want %d", turn, len(got), turn)
		}
	}
}

// TestGemini_RealCLIRecoversLostSessions: Gemini CLI 0.61.0 refuses to load
// a session whose store is gone, or one it never had (an error response to
// session/load: "No previous sessions found for this project." when it has
// none, "Invalid session identifier" when it has others); the preset starts
// a fresh session once and says so.
func TestGemini_RealCLIRecoversLostSessions(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, true)
	vault := t.TempDir()
	first := rg.FirstTurn(vault)
	res1, _ := rg.Run(t, first)

	const foreign = "11111111-2222-4333-8444-555555555555"
	for _, tc := range []struct {
		name, handle string
		wipe         bool
		reason       string
	}{
		{"store wiped", res1.Resume, true, "No previous sessions found for this project. (ACP error -32603)"},
		// After the wipe the store has the fresh session only.
		{"another agent's handle", foreign, false, `Invalid session identifier "` + foreign + `".`},
	} {
		if tc.wipe {
			rg.wipeChats(t)
		} else {
			rg.ageChats(t)
		}
		req := realcli.NextTurn(first, tc.handle)
		res, calls := rg.Run(t, req)
		if res.Restarted == nil || res.Restarted.Handle != tc.handle || !strings.HasPrefix(res.Restarted.Reason, tc.reason) {
			t.Errorf("%s: Restarted = %+v; want handle %s, reason %q", tc.name, res.Restarted, tc.handle, tc.reason)
		}
		if res.Resume == "" || res.Resume == tc.handle || res.Reply != "MOCK REPLY (user messages seen: 1)" {
			t.Errorf("%s: reply %q resume %q; want the mock reply for 1 user turn in a fresh session", tc.name, res.Reply, res.Resume)
		}
		call := realcli.MustOneCall(t, req.Turn, calls)
		wantOnlyPrompts(t, tc.name, call, res.Prompt)
		if res.Restarted != nil && !strings.Contains(res.Prompt, "could not be continued: "+res.Restarted.Reason+")\n") {
			t.Errorf("%s: the prompt does not say the session was restarted:\n%s", tc.name, res.Prompt)
		}
	}
}

// TestGemini_RealCLIUntrustedFolder: in ACP mode Gemini CLI 0.61.0 does not
// refuse a folder the user has not trusted (headless, it exits 55): it runs
// without the folder's own settings, hooks and agents. The run succeeds, a
// note says so, and knotd trusts nothing: no flag, no trustedFolders.json.
func TestGemini_RealCLIUntrustedFolder(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, false)
	res, _ := rg.Run(t, rg.FirstTurn(t.TempDir()))
	wantArgv(t, res, rg.Agent.Command[0])
	if res.Reply != "MOCK REPLY (user messages seen: 1)" {
		t.Errorf("reply %q; want the mock reply", res.Reply)
	}
	noted := false
	for _, n := range res.Notes {
		noted = noted || (strings.Contains(n, "does not trust the vault folder") && strings.Contains(n, "trustedFolders.json"))
	}
	if !noted {
		t.Errorf("Notes = %q; want one saying the folder is not trusted and how to trust it\nstderr %s", res.Notes, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(rg.home, ".gemini", "trustedFolders.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("trustedFolders.json: %v; want none (knotd trusts no folder)", err)
	}
}

// TestGemini_RealCLIAuthError: a 401 is the prompt's error response; the CLI
// exits 0 when knotd closes its input, and the turn fails with the API's
// error. No session is kept for it.
func TestGemini_RealCLIAuthError(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, true)
	rg.api.SetStatus(401)
	res, _ := rg.Attempt(t, rg.FirstTurn(t.TempDir()))
	if res.Outcome != agentrun.OutcomeFailed || res.ExitCode != 0 {
		t.Fatalf("Run = %s (exit %d) %q; want failed, exit 0\nstderr %s", res.Outcome, res.ExitCode, res.Reason, res.Stderr)
	}
	for _, want := range []string{"401", "UNAUTHENTICATED", "invalid authentication credentials"} {
		if !strings.Contains(res.Reason, want) {
			t.Errorf("Reason = %q; want it to say %q", res.Reason, want)
		}
	}
}

// TestGemini_RealCLIServerErrorRetried: Gemini CLI retries a 500 with
// backoff; one 500 costs one backoff and the turn succeeds.
func TestGemini_RealCLIServerErrorRetried(t *testing.T) {
	t.Parallel()
	rg := newRealGemini(t, true)
	rg.api.FailNext(500, 1)
	res, _ := rg.Run(t, rg.FirstTurn(t.TempDir()))
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

// atNote names a vault file with "@"; atSecret is what writeAtSecret puts
// in that file.
const (
	atNote   = "# Mail\n\nMail me@example.com, and see @notes/secret.txt\n"
	atSecret = "TOP SECRET CONTENT 7f3a\n"
)

// writeAtSecret writes the file atNote names into vault.
func writeAtSecret(t *testing.T, vault string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(vault, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vault, "notes", "secret.txt"), []byte(atSecret), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGemini_RealCLIVerbatim: the note reaches the model byte for byte
// through the preset, "@" and all, and a vault file it names is not read:
// the fix for what TestGemini_RealCLIAtReferences pins.
func TestGemini_RealCLIVerbatim(t *testing.T) {
	t.Parallel()
	const note, secret = atNote, atSecret
	rg := newRealGemini(t, true)
	vault := t.TempDir()
	writeAtSecret(t, vault)
	req := rg.FirstTurn(vault)
	req.Event.Strand.Content = []byte(note)
	res, calls := rg.Run(t, req)
	if !strings.Contains(res.Prompt, note) {
		t.Fatalf("the prompt does not hold the note:\n%s", res.Prompt)
	}
	call := realcli.MustOneCall(t, 1, calls)
	wantOnlyPrompts(t, "the note's turn", call, res.Prompt)
	for _, r := range rg.api.Requests() {
		if bytes.Contains(r.Body, []byte("TOP SECRET")) {
			t.Errorf("%s %s carried the referenced file's content", r.Method, r.Path)
		}
	}
}

// TestGemini_RealCLIPermissions: the model calls Gemini CLI's write_file
// tool (and run_shell_command); the CLI asks knotd's permission, which
// the preset answers per Agent.Permissions. The file is written only when
// edits are allowed, the command run only with full permissions.
func TestGemini_RealCLIPermissions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		perm              agentrun.Permissions
		wantWrite, wantSh bool // whether the write and the command are allowed
	}{
		{perm: "", wantWrite: false, wantSh: false}, // read-only by default
		{perm: agentrun.PermEdit, wantWrite: true, wantSh: false},
		{perm: agentrun.PermFull, wantWrite: true, wantSh: true},
	} {
		t.Run(string(tc.perm)+"_", func(t *testing.T) {
			t.Parallel()
			rg := newRealGemini(t, true)
			rg.Agent.Permissions = tc.perm
			vault := t.TempDir()
			written := filepath.Join(vault, "notes", "out.md")
			ran := filepath.Join(vault, "ran.txt")
			rg.api.QueueFunctionCall(geminitest.GeminiFunctionCall{Name: "write_file",
				Args: map[string]any{"file_path": written, "content": "written by the model\n"}})
			rg.api.QueueFunctionCall(geminitest.GeminiFunctionCall{Name: "run_shell_command",
				Args: map[string]any{"command": "echo ran > ran.txt", "description": "write ran.txt"}})
			res, calls := rg.Run(t, rg.FirstTurn(vault))
			if len(calls) != 3 {
				t.Errorf("%d conversation calls; want 3 (the write, the command, the reply)", len(calls))
			}
			if res.Reply != "MOCK REPLY (user messages seen: 1)" {
				t.Errorf("reply %q; want the mock reply", res.Reply)
			}
			got, err := os.ReadFile(written)
			if tc.wantWrite != (err == nil) || (err == nil && string(got) != "written by the model\n") {
				t.Errorf("%s: the written file: %q, %v; want written %v", rg.Agent.Permissions, got, err, tc.wantWrite)
			}
			if _, err := os.Stat(ran); tc.wantSh != (err == nil) {
				t.Errorf("%s: the command's file: %v; want it run %v", rg.Agent.Permissions, err, tc.wantSh)
			}
			resps := rg.api.FunctionResponses()
			if len(resps) != 2 {
				t.Fatalf("function responses %+v; want 2", resps)
			}
			for i, allowed := range []bool{tc.wantWrite, tc.wantSh} {
				_, refused := resps[i].Response["error"]
				if refused == allowed {
					t.Errorf("%s: the response to %s = %v; want refused %v", rg.Agent.Permissions, resps[i].Name, resps[i].Response, !allowed)
				}
			}
			asked := 0
			for _, n := range res.Notes {
				if strings.HasPrefix(n, "Gemini CLI asked permission for ") {
					asked++
				}
			}
			if asked != 2 {
				t.Errorf("Notes %q; want one for each permission asked", res.Notes)
			}
		})
	}
}

// TestGemini_RealCLIAtReferences documents what Gemini CLI 0.61.0 does to
// a prompt that holds "@" references in headless mode, the reason the
// gemini preset uses ACP mode (TestGemini_RealCLIVerbatim). Headless, it passes every prompt (standard
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
// The test runs the CLI headless itself, as the preset did before.
func TestGemini_RealCLIAtReferences(t *testing.T) {
	t.Parallel()
	const note, secret = atNote, atSecret
	rg := newRealGemini(t, true)
	vault := t.TempDir()
	// headless runs the CLI as the gemini preset did before it used ACP.
	headless := func(t *testing.T) []geminitest.GeminiRequest {
		t.Helper()
		before := len(rg.api.ChatRequests())
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, rg.Agent.Command[0], "--output-format", "json")
		cmd.Dir, cmd.Env, cmd.WaitDelay = vault, rg.Runner.Environ(), 10*time.Second
		cmd.Stdin = strings.NewReader(note)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("gemini --output-format json: %v\n%s", err, out)
		}
		return rg.api.ChatRequests()[before:]
	}

	t.Run("no such file: verbatim", func(t *testing.T) {
		call := realcli.MustOneCall(t, 1, headless(t))
		wantOnlyPrompts(t, "no referenced file", call, note)
	})

	t.Run("referenced file exists: rewritten, file sent", func(t *testing.T) {
		writeAtSecret(t, vault)
		call := realcli.MustOneCall(t, 1, headless(t))
		got := strings.Join(call.UserTexts(), "\n")
		if strings.Contains(got, note) {
			t.Errorf("the note reached the model verbatim; Gemini CLI 0.61.0 was seen to rewrite it. Has @ processing changed?\n%s", got)
		}
		for _, want := range []string{"Mail me @example.com, and see @notes/secret.txt", "--- Content from referenced files ---", strings.TrimSpace(secret)} {
			if !strings.Contains(got, want) {
				t.Errorf("the model's user turn lacks %q:\n%s", want, got)
			}
		}
	})
}

// TestGemini_RealCLIAsk: at permissions ask, the model calls Gemini CLI's
// write_file and run_shell_command; the CLI's requests for permission
// reach Request.Ask as questions (the file, its diff, the command), and
// the user's answer decides each: an approved write makes the file appear
// and the reply follow, a denied one leaves no file and the model is told
// (the tool's error is its function response); a call nobody answers in
// time (ask_wait) is refused for now and the run ends ok.
func TestGemini_RealCLIAsk(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		write, sh question.Verdict // the answers; "": none in time
	}{
		{"approve the write, deny the command", question.Approve, question.Deny},
		{"deny both", question.Deny, question.Deny},
		{"no answer", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rg := newRealGemini(t, true)
			rg.Agent.Permissions, rg.Agent.AskWait = agentrun.PermAsk, time.Second
			vault := t.TempDir()
			written := filepath.Join(vault, "notes", "out.md")
			ran := filepath.Join(vault, "ran.txt")
			rg.api.QueueFunctionCall(geminitest.GeminiFunctionCall{Name: "write_file",
				Args: map[string]any{"file_path": written, "content": "written by the model\n"}})
			rg.api.QueueFunctionCall(geminitest.GeminiFunctionCall{Name: "run_shell_command",
				Args: map[string]any{"command": "echo ran > ran.txt", "description": "write ran.txt"}})
			var (
				mu    sync.Mutex
				asked []question.Call
			)
			req := rg.FirstTurn(vault)
			req.Ask = func(ctx context.Context, c question.Call) (question.Answer, bool) {
				mu.Lock()
				asked = append(asked, c)
				mu.Unlock()
				v := tc.write
				if c.Kind == question.KindCommand {
					v = tc.sh
				}
				if v == "" {
					<-ctx.Done()
					return question.Answer{}, false
				}
				return question.Answer{ID: question.NewID(req.RunID, c.Hash()), CallHash: c.Hash(), Verdict: v, Why: "not now", From: question.FromNote}, true
			}
			res, calls := rg.Run(t, req)
			if len(calls) != 3 || res.Reply != "MOCK REPLY (user messages seen: 1)" {
				t.Errorf("%d conversation calls, reply %q; want 3 (the write, the command, the reply) and the mock reply", len(calls), res.Reply)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 2 {
				t.Fatalf("Ask was called for %+v; want the write and the command", asked)
			}
			w, sh := asked[0], asked[1]
			if w.Kind != question.KindEdit || w.Path != "notes/out.md" || !strings.Contains(w.Diff, "+written by the model") {
				t.Errorf("the write's question = %+v", w)
			}
			if sh.Kind != question.KindCommand || !strings.Contains(sh.Command, "echo ran > ran.txt") {
				t.Errorf("the command's question = %+v", sh)
			}
			got, err := os.ReadFile(written)
			if wantWrite := tc.write == question.Approve; wantWrite != (err == nil) || (err == nil && string(got) != "written by the model\n") {
				t.Errorf("the written file: %q, %v; want written %v", got, err, wantWrite)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("the command ran; want it refused")
			}
			resps := rg.api.FunctionResponses()
			if len(resps) != 2 {
				t.Fatalf("function responses %+v; want 2", resps)
			}
			for i, allowed := range []bool{tc.write == question.Approve, false} {
				if _, refused := resps[i].Response["error"]; refused == allowed {
					t.Errorf("the response to %s = %v; want refused %v (the model is told)", resps[i].Name, resps[i].Response, !allowed)
				}
			}
		})
	}
}
