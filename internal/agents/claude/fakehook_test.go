package claude_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// hookAnswer is a PreToolUse hook's answer as Claude Code 2.1.330 reads it.
func hookAnswer(decision, reason string) string {
	out := map[string]any{"hookEventName": "PreToolUse", "permissionDecision": decision}
	if reason != "" {
		out["permissionDecisionReason"] = reason
	}
	b, _ := json.Marshal(map[string]any{"hookSpecificOutput": out})
	return string(b)
}

// fakeRun is one run of the Claude fake.
type fakeRun struct {
	exit   int
	lines  []map[string]any
	stderr string
}

func (r fakeRun) result() map[string]any {
	if len(r.lines) == 0 {
		return nil
	}
	return r.lines[len(r.lines)-1]
}

// toolResult returns the tool result the run's stream shows, "" when none.
func (r fakeRun) toolResult() (string, bool) {
	for _, l := range r.lines {
		if l["type"] != "user" {
			continue
		}
		for _, c := range l["message"].(map[string]any)["content"].([]any) {
			if b := c.(map[string]any); b["type"] == "tool_result" {
				return b["content"].(string), b["is_error"] == true
			}
		}
	}
	return "", false
}

func runFakeClaude(t *testing.T, vault, state, stdin string, args ...string) fakeRun {
	t.Helper()
	cmd := exec.Command(fakeagent.Program(t), append([]string{"-p", "--output-format", "stream-json", "--verbose"}, args...)...)
	cmd.Dir = vault
	cmd.Env = append(os.Environ(), fakeagent.EnvBehaviour+"="+fakeagent.Claude, fakeagent.EnvState+"="+state)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := fakeRun{stderr: stderr.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		run.exit = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("fake claude printed %q: %v", sc.Text(), err)
		}
		run.lines = append(run.lines, m)
	}
	return run
}

// TestFakeClaude_PreToolUseHook: the Claude fake asks its --settings hook
// about the Write its prompt asks for and acts on the answer as Claude Code
// 2.1.330 does (defer ends the turn with tool_deferred, a resume with an
// empty stdin asks again).
func TestFakeClaude_PreToolUseHook(t *testing.T) {
	const session = "11111111-2222-4333-8444-555555555555"
	tests := []struct {
		name    string
		answers []string // the hook's answer on each run: the first, then each resume
		// What the last run did.
		wantWritten  bool
		wantResult   string
		wantError    bool
		wantDeferred []bool // per run
	}{
		{name: "allow", answers: []string{hookAnswer("allow", "")}, wantWritten: true,
			wantResult: "File created successfully at: ", wantDeferred: []bool{false}},
		{name: "deny", answers: []string{hookAnswer("deny", "not today")},
			wantResult: "PreToolUse:Write hook error: not today", wantError: true, wantDeferred: []bool{false}},
		{name: "no decision", answers: []string{""},
			wantResult: "Claude requested permissions to write to ", wantError: true, wantDeferred: []bool{false}},
		{name: "defer then allow", answers: []string{hookAnswer("defer", ""), hookAnswer("allow", "")}, wantWritten: true,
			wantResult: "File created successfully at: ", wantDeferred: []bool{true, false}},
		{name: "defer twice then deny", answers: []string{hookAnswer("defer", ""), hookAnswer("defer", ""), hookAnswer("deny", "no")},
			wantResult: "PreToolUse:Write hook error: no", wantError: true, wantDeferred: []bool{true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vault, state := t.TempDir(), t.TempDir()
			answer := filepath.Join(t.TempDir(), "answer")
			settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
				"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": fakeagent.Program(t), "args": []string{"testhook", answer}}},
			}}}})
			target := filepath.Join(vault, "out.md")
			var run fakeRun
			for i, a := range tt.answers {
				if err := os.WriteFile(answer, []byte(a), 0o600); err != nil {
					t.Fatal(err)
				}
				args := []string{"--setting-sources", "user", "--permission-mode", "default", "--settings", string(settings)}
				stdin := ""
				if i == 0 {
					args, stdin = append(args, "--session-id", session), "please\nFAKE TOOL Write out.md line one\\nline two\n"
				} else {
					args = append(args, "--resume", session)
				}
				run = runFakeClaude(t, vault, state, stdin, args...)
				res := run.result()
				if run.exit != 0 || res == nil || res["session_id"] != session {
					t.Fatalf("run %d: exit %d, result %v, stderr %q; want exit 0 and a result of %s", i, run.exit, res, run.stderr, session)
				}
				deferred := res["stop_reason"] == "tool_deferred"
				if deferred != tt.wantDeferred[i] {
					t.Fatalf("run %d: result %v; want deferred %t", i, res, tt.wantDeferred[i])
				}
				if deferred {
					d, _ := res["deferred_tool_use"].(map[string]any)
					if res["result"] != "" || d["name"] != "Write" || d["input"].(map[string]any)["file_path"] != target {
						t.Errorf("run %d: deferred result %v; want result \"\" and the Write of %s", i, res, target)
					}
					if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("run %d: the deferred Write wrote the file (%v)", i, err)
					}
				}
			}
			in, err := os.ReadFile(answer + ".in")
			if err != nil {
				t.Fatal(err)
			}
			hookRuns := strings.Split(strings.TrimSpace(string(in)), "\n")
			if len(hookRuns) != len(tt.answers) {
				t.Errorf("the hook ran %d times; want %d", len(hookRuns), len(tt.answers))
			}
			var hin map[string]any
			if err := json.Unmarshal([]byte(hookRuns[0]), &hin); err != nil || hin["hook_event_name"] != "PreToolUse" ||
				hin["tool_name"] != "Write" || hin["session_id"] != session || hin["cwd"] == nil ||
				hin["tool_input"].(map[string]any)["content"] != "line one\nline two" {
				t.Errorf("hook input %s (%v); want a PreToolUse of Write with its input", hookRuns[0], err)
			}
			got, isErr := run.toolResult()
			if !strings.HasPrefix(got, tt.wantResult) || isErr != tt.wantError {
				t.Errorf("tool result %q (error %t); want %q… (error %t)", got, isErr, tt.wantResult, tt.wantError)
			}
			if r := run.result()["result"]; r != "FAKE TOOL RESULT: "+got {
				t.Errorf("reply %q; want it to quote the tool result", r)
			}
			b, err := os.ReadFile(target)
			if tt.wantWritten != (err == nil) || tt.wantWritten && string(b) != "line one\nline two" {
				t.Errorf("file %q (%v); want written %t", b, err, tt.wantWritten)
			}
			// The deferred call is gone: resuming with nothing fails as
			// Claude Code does.
			again := runFakeClaude(t, vault, state, "", "--setting-sources", "user", "--permission-mode", "default", "--settings", string(settings), "--resume", session)
			if again.exit != 1 || !strings.HasPrefix(again.stderr, "Error: No deferred tool marker found") {
				t.Errorf("resume with nothing deferred: exit %d, stderr %q; want exit 1 and Claude Code's refusal", again.exit, again.stderr)
			}
		})
	}
}
