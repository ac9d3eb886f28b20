package claude_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/question"
)

// EnvRecordAsk, set to a directory, makes TestClaude_RealCLIAsk write what
// the real CLI printed on each turn there (see testdata/ask/README.md).
const EnvRecordAsk = "KNOT_RECORD_CLAUDE_ASK"

// askFinal is the stand-in's final text once the CLI sent the tool's
// result: it quotes the result, so the reply shows what the model was told.
func askFinal(r agenttest.ToolResult) string {
	if r.IsError {
		return "TOLD REFUSED: " + r.Output
	}
	return "TOLD DONE: " + r.Output
}

// TestClaude_RealCLIAsk drives the real Claude Code CLI through the claude
// preset at permissions: ask, with knotd's own hook (this test binary's
// `hook`, as knotd's), against a stand-in whose model asks to Write a file
// or run a Bash command: the first turn ends holding the call (no file, a
// question in Result.Questions, stop_reason tool_deferred), and the turn
// that continues it with the user's answer resumes the session with an
// empty prompt: an approval runs the call and the model gets its result;
// a denial leaves the file absent and tells the model the user's reason;
// an approval bound to another call's hash holds the call again.
func TestClaude_RealCLIAsk(t *testing.T) {
	type turn2 struct {
		verdict question.Verdict
		why     string
		other   bool // the approval names another call's hash
	}
	tests := []struct {
		name string
		// call returns the model's tool call, writing target.
		call   func(target string) agenttest.ToolCall
		answer turn2
		// What the continuing turn does.
		wantWritten bool
		wantHeld    bool
		wantResult  []string // in the tool result the model gets
		wantError   bool
	}{
		{
			name:        "write approved",
			call:        writeCall,
			answer:      turn2{verdict: question.Approve},
			wantWritten: true, wantResult: []string{"File created successfully"},
		},
		{
			name:       "write denied",
			call:       writeCall,
			answer:     turn2{verdict: question.Deny, why: "not in this folder"},
			wantResult: []string{"denied", "not in this folder"}, wantError: true,
		},
		{
			name:     "approval of another call",
			call:     writeCall,
			answer:   turn2{verdict: question.Approve, other: true},
			wantHeld: true,
		},
		{
			name:        "command approved",
			call:        bashCall,
			answer:      turn2{verdict: question.Approve},
			wantWritten: true,
		},
		{
			name:       "command denied",
			call:       bashCall,
			answer:     turn2{verdict: question.Deny, why: "no commands today"},
			wantResult: []string{"denied", "no commands today"}, wantError: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newRealClaude(t)
			rc.Agent.Permissions = agentrun.PermAsk
			rc.Agent.Instructions = "ASK INSTRUCTIONS"
			vault := t.TempDir()
			target := filepath.Join(vault, "made.md")
			call := tt.call(target)
			rc.api.SetAnswer(func(r claudetest.Request) agenttest.Reply {
				for _, res := range r.ToolResults() {
					if res.ID == call.ID {
						return agenttest.Reply{Text: askFinal(res)}
					}
				}
				return agenttest.Reply{Text: "I would like to do this.", ToolCalls: []agenttest.ToolCall{call}}
			})
			req1 := rc.FirstTurn(vault)
			req1.Agent = rc.Agent
			req1.StateDir = t.TempDir()
			res1, calls1 := rc.Run(t, req1)
			record(t, tt.name, 1, res1)

			// The first turn holds the call.
			if !slices.Contains(res1.Argv, "--settings") || !slices.Contains(res1.Argv, "default") {
				t.Errorf("turn 1 argv %q; want --permission-mode default --settings", res1.Argv)
			}
			if len(res1.Questions) != 1 {
				t.Fatalf("turn 1: questions %+v (reply %q); want the held call\nstdout %s\nstderr %s", res1.Questions, res1.Reply, res1.Stdout, res1.Stderr)
			}
			q := res1.Questions[0]
			var in, want map[string]any
			if err := json.Unmarshal(q.Input, &in); err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(call.Input); json.Unmarshal(b, &want) != nil || !equalJSON(in, want) {
				t.Errorf("held call input %s; want %v", q.Input, call.Input)
			}
			if q.Tool != call.Name || q.ToolUseID != call.ID || q.Why != "I would like to do this." {
				t.Errorf("held call %+v; want %s %s, why the model's text", q, call.Name, call.ID)
			}
			if !strings.Contains(string(res1.Stdout), `"stop_reason":"tool_deferred"`) || res1.Reply != "" || res1.Resume != realcli.Session {
				t.Errorf("turn 1: reply %q, resume %q, stdout %s; want tool_deferred, no reply, the session kept", res1.Reply, res1.Resume, res1.Stdout)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Errorf("turn 1 made %s (%v); want it held", target, err)
			}
			if n := len(calls1); n != 1 {
				t.Errorf("turn 1 made %d model calls; want 1 (the call is held, the turn ends)", n)
			}
			if fi, err := os.Stat(filepath.Join(req1.StateDir, "claude-ask")); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("answers folder %v, %v; want 0700", fi, err)
			}

			// The user answers; the run continues the held call.
			hash := q.Hash()
			if tt.answer.other {
				other := q
				other.Input = json.RawMessage(strings.Replace(string(q.Input), "made", "other", 1))
				hash = other.Hash()
			}
			req2 := realcli.NextTurn(req1, res1.Resume)
			req2.Event = req1.Event
			req2.Previous = nil
			req2.Continuing = true
			req2.Answers = []question.Answer{{ID: question.NewID(req1.RunID, q.Hash()), CallHash: hash, Verdict: tt.answer.verdict,
				Why: tt.answer.why, From: question.FromNote, At: time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)}}
			res2, calls2 := rc.Run(t, req2)
			record(t, tt.name, 2, res2)
			if i := slices.Index(res2.Argv, "--resume"); i < 0 || res2.Argv[i+1] != realcli.Session || res2.Prompt != "" {
				t.Errorf("turn 2 argv %q, prompt %q; want --resume %s with an empty prompt", res2.Argv, res2.Prompt, realcli.Session)
			}
			_, err := os.Stat(target)
			if written := err == nil; written != tt.wantWritten {
				t.Errorf("turn 2: %s written %t (%v); want %t", target, written, err, tt.wantWritten)
			}
			if tt.wantHeld {
				if len(res2.Questions) != 1 || res2.Questions[0].Hash() != q.Hash() || res2.Reply != "" {
					t.Errorf("turn 2: questions %+v, reply %q; want the same call held again", res2.Questions, res2.Reply)
				}
				if len(calls2) != 0 {
					t.Errorf("turn 2 made %d model calls; want none (held again before any)", len(calls2))
				}
				return
			}
			if len(res2.Questions) != 0 {
				t.Errorf("turn 2: questions %+v; want none", res2.Questions)
			}
			result := realcli.ResultOf(calls2, call.ID)
			if result == nil {
				t.Fatalf("turn 2: the model got no result for %s; reply %q\nstdout %s", call.ID, res2.Reply, res2.Stdout)
			}
			for _, w := range tt.wantResult {
				if !strings.Contains(result.Output, w) {
					t.Errorf("turn 2: tool result %q; want it to say %q", result.Output, w)
				}
			}
			if result.IsError != tt.wantError {
				t.Errorf("turn 2: tool result is_error %t; want %t (%q)", result.IsError, tt.wantError, result.Output)
			}
			if res2.Reply != askFinal(*result) {
				t.Errorf("turn 2 reply %q; want the model's reply after the result, %q", res2.Reply, askFinal(*result))
			}
			// The resumed turn keeps the instructions, and adds no prompt.
			last := calls2[len(calls2)-1]
			if !strings.Contains(last.System, "ASK INSTRUCTIONS") {
				t.Errorf("turn 2: the system prompt lost the instructions")
			}
			if got := last.UserPrompts(); len(got) == 0 || got[0] != res1.Prompt {
				t.Errorf("turn 2: the model saw user prompts %q; want turn 1's first", got)
			}
		})
	}
}

func writeCall(target string) agenttest.ToolCall {
	return agenttest.ToolCall{ID: "toolu_ask_write", Name: "Write", Input: map[string]string{"file_path": target, "content": realcli.PermContent}}
}

func bashCall(target string) agenttest.ToolCall {
	return agenttest.ToolCall{ID: "toolu_ask_bash", Name: "Bash",
		Input: map[string]string{"command": "echo made > " + filepath.Base(target), "description": "Make a file"}}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// record writes a turn's standard output to $KNOT_RECORD_CLAUDE_ASK.
func record(t *testing.T, name string, turn int, res agentrun.Result) {
	dir := os.Getenv(EnvRecordAsk)
	if dir == "" {
		return
	}
	file := filepath.Join(dir, fmt.Sprintf("%s.turn%d.jsonl", strings.ReplaceAll(name, " ", "-"), turn))
	if err := os.WriteFile(file, res.Stdout, 0o644); err != nil {
		t.Fatal(err)
	}
}
