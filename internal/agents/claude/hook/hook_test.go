package hook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/question"
)

// hookInput is a PreToolUse hook input as Claude Code 2.1.330 sends it
// (testdata/recorded/ask-*.hook-input.json of package claude).
func hookInput(cwd, tool string, input any) string {
	in, _ := json.Marshal(input)
	b, _ := json.Marshal(map[string]any{
		"session_id": "11111111-2222-4333-8444-555555555555", "transcript_path": "/h/.claude/projects/x/1111.jsonl",
		"cwd": cwd, "permission_mode": "default", "effort": map[string]any{"level": "medium"},
		"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": json.RawMessage(in), "tool_use_id": "toolu_1",
	})
	return string(b)
}

func TestPreToolUse(t *testing.T) {
	vault := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(vault, "link")); err != nil {
		t.Fatal(err)
	}
	write := map[string]string{"file_path": filepath.Join(vault, "a.md"), "content": "hi"}
	writeCall := question.Call{Tool: "Write", Input: mustJSON(t, write)}
	bash := map[string]string{"command": "rm -rf /", "description": "tidy"}
	bashCall := question.Call{Tool: "Bash", Input: mustJSON(t, bash)}
	approve := func(c question.Call) question.Answer {
		return question.Answer{ID: "3f9a2c1b", CallHash: c.Hash(), Verdict: question.Approve, From: question.FromNote}
	}
	deny := func(c question.Call, why string) question.Answer {
		return question.Answer{ID: "3f9a2c1b", CallHash: c.Hash(), Verdict: question.Deny, Why: why, From: question.FromNote}
	}
	tests := []struct {
		name    string
		input   string
		answers any    // written to the answers file as JSON; a string is written as it is; nil: no file
		want    string // the decision, "" for none
		reason  []string
	}{
		{name: "read passes", input: hookInput(vault, "Read", map[string]string{"file_path": "/etc/passwd"}), answers: nil, want: ""},
		{name: "grep passes", input: hookInput(vault, "Grep", map[string]string{"pattern": "x"}), answers: Answers{Vault: vault}, want: ""},
		{name: "write deferred", input: hookInput(vault, "Write", write), answers: Answers{Vault: vault}, want: "defer"},
		{name: "bash deferred", input: hookInput(vault, "Bash", bash), answers: Answers{Vault: vault}, want: "defer"},
		{name: "unknown tool deferred", input: hookInput(vault, "mcp__x__y", map[string]int{"n": 1}), answers: Answers{Vault: vault}, want: "defer"},
		{name: "write approved", input: hookInput(vault, "Write", write), answers: Answers{Vault: vault, Answers: []question.Answer{approve(writeCall)}}, want: "allow"},
		{name: "same input, other key order, approved", input: hookInput(vault, "Write", map[string]any{"content": "hi", "file_path": write["file_path"]}),
			answers: Answers{Vault: vault, Answers: []question.Answer{approve(writeCall)}}, want: "allow"},
		{name: "bash approved", input: hookInput(vault, "Bash", bash), answers: Answers{Vault: vault, Answers: []question.Answer{approve(bashCall)}}, want: "allow"},
		{name: "approval of another call", input: hookInput(vault, "Bash", bash), answers: Answers{Vault: vault, Answers: []question.Answer{approve(writeCall)}}, want: "defer"},
		{name: "approval of another content", input: hookInput(vault, "Write", map[string]string{"file_path": write["file_path"], "content": "other"}),
			answers: Answers{Vault: vault, Answers: []question.Answer{approve(writeCall)}}, want: "defer"},
		{name: "withdrawn", input: hookInput(vault, "Write", write),
			answers: Answers{Vault: vault, Answers: []question.Answer{{ID: "3f9a2c1b", CallHash: writeCall.Hash(), Verdict: question.Withdraw}}}, want: "defer"},
		{name: "denied with reason", input: hookInput(vault, "Write", write), answers: Answers{Vault: vault, Answers: []question.Answer{deny(writeCall, "not now")}},
			want: "deny", reason: []string{"denied", "3f9a2c1b", "not now"}},
		{name: "denied without reason", input: hookInput(vault, "Write", write), answers: Answers{Vault: vault, Answers: []question.Answer{deny(writeCall, "")}},
			want: "deny", reason: []string{"denied", "no reason given"}},
		{name: "denial wins over approval", input: hookInput(vault, "Write", write),
			answers: Answers{Vault: vault, Answers: []question.Answer{approve(writeCall), deny(writeCall, "changed my mind")}}, want: "deny", reason: []string{"changed my mind"}},
		{name: "write outside the vault denied", input: hookInput(vault, "Write", map[string]string{"file_path": filepath.Join(outside, "x.md"), "content": "x"}),
			answers: Answers{Vault: vault}, want: "deny", reason: []string{"outside the vault"}},
		{name: "relative write escaping denied", input: hookInput(vault, "Edit", map[string]string{"file_path": "../x.md", "old_string": "a", "new_string": "b"}),
			answers: Answers{Vault: vault}, want: "deny", reason: []string{"outside the vault"}},
		{name: "write through a link out denied", input: hookInput(vault, "Write", map[string]string{"file_path": filepath.Join(vault, "link", "new", "x.md"), "content": "x"}),
			answers: Answers{Vault: vault}, want: "deny", reason: []string{"outside the vault"}},
		{name: "approved write outside the vault denied", input: hookInput(vault, "Write", map[string]string{"file_path": "/tmp/x.md", "content": "x"}),
			answers: Answers{Vault: vault, Answers: []question.Answer{approve(question.Call{Tool: "Write", Input: mustJSON(t, map[string]string{"file_path": "/tmp/x.md", "content": "x"})})}},
			want:    "deny", reason: []string{"outside the vault"}},
		{name: "relative write inside", input: hookInput(vault, "Write", map[string]string{"file_path": "sub/x.md", "content": "x"}), answers: Answers{Vault: vault}, want: "defer"},
		{name: "no answers file", input: hookInput(vault, "Write", write), answers: nil, want: "defer"},
		{name: "garbled answers file", input: hookInput(vault, "Write", write), answers: `{"vault": "` + vault + `", "answers": [{"id": `, want: "defer"},
		{name: "answers file without a vault", input: hookInput(vault, "Write", write), answers: `{"answers":[]}`, want: "defer"},
		{name: "huge answers file", input: hookInput(vault, "Write", write), answers: `{"vault":"` + vault + `","answers":[],"pad":"` + strings.Repeat("x", MaxAnswersFile) + `"}`, want: "defer"},
		{name: "garbled input", input: `{"hook_event_name":"PreToolUse","tool_name":`, answers: Answers{Vault: vault}, want: "defer"},
		{name: "input too large", input: hookInput(vault, "Write", map[string]string{"file_path": write["file_path"], "content": strings.Repeat("x", MaxInput)}),
			answers: Answers{Vault: vault}, want: "deny", reason: []string{"too large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "ask", "answers.json")
			switch a := tt.answers.(type) {
			case Answers:
				if err := WriteAnswers(file, a); err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
					t.Fatalf("answers file: %v, %v; want mode 0600", fi, err)
				}
			case string:
				if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(a), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			if err := Main([]string{"claude-pretooluse", file}, strings.NewReader(tt.input), &out); err != nil {
				t.Fatal(err)
			}
			if tt.want == "" {
				if out.Len() != 0 {
					t.Errorf("output %q; want none (no decision)", out.String())
				}
				return
			}
			var got struct {
				HookSpecificOutput map[string]string `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal(out.Bytes(), &got); err != nil {
				t.Fatalf("output %q: %v", out.String(), err)
			}
			h := got.HookSpecificOutput
			if h["hookEventName"] != "PreToolUse" || h["permissionDecision"] != tt.want {
				t.Errorf("output %q; want a PreToolUse %s", out.String(), tt.want)
			}
			for _, r := range tt.reason {
				if !strings.Contains(h["permissionDecisionReason"], r) {
					t.Errorf("reason %q; want it to say %q", h["permissionDecisionReason"], r)
				}
			}
			if tt.reason == nil && h["permissionDecisionReason"] != "" {
				t.Errorf("reason %q; want none", h["permissionDecisionReason"])
			}
		})
	}
}

func TestMain_Usage(t *testing.T) {
	for _, args := range [][]string{nil, {"claude-pretooluse"}, {"other", "f"}, {"claude-pretooluse", "f", "g"}} {
		if err := Main(args, strings.NewReader(""), &bytes.Buffer{}); err != ErrUsage {
			t.Errorf("Main(%q) = %v; want ErrUsage", args, err)
		}
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
