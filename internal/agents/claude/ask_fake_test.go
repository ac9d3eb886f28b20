package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/question"
)

// TestClaude_AskWithFake runs the claude preset at permissions: ask with
// the Claude fake and knotd's own hook (this test binary's, the default
// when Request.Hook is empty), without the real CLI: the held call is a
// question and the run is ok; the run that continues it resumes with an
// empty prompt, and the hook applies the answer bound to the call.
func TestClaude_AskWithFake(t *testing.T) {
	tests := []struct {
		name        string
		verdict     question.Verdict
		otherHash   bool
		wantWritten bool
		wantReply   string
		wantHeld    bool
	}{
		{name: "approved", verdict: question.Approve, wantWritten: true, wantReply: "FAKE TOOL RESULT: File created successfully at: "},
		{name: "denied", verdict: question.Deny, wantReply: "FAKE TOOL RESULT: PreToolUse:Write hook error: the user denied this call"},
		{name: "approval of another call", verdict: question.Approve, otherHash: true, wantHeld: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state, vault := t.TempDir(), t.TempDir()
			rc := realcli.New(agentrun.PresetClaude, fakeagent.Program(t), os.Environ(), func() []struct{} { return nil })
			rc.Agent.Env = fakeagent.Env(fakeagent.Claude, state)
			rc.Agent.Permissions = agentrun.PermAsk
			req := rc.FirstTurn(vault)
			req.StateDir = t.TempDir()
			req.Event.Strand.Content = []byte("# Plan\n\n" + claudetest.FakeTool + "Write made.md hello\n")
			res, _ := rc.Run(t, req)
			target := filepath.Join(vault, "made.md")
			if len(res.Questions) != 1 || res.Questions[0].Tool != "Write" || res.Reply != "" || res.Resume != realcli.Session {
				t.Fatalf("turn 1: questions %+v, reply %q, resume %q; want the Write held in %s", res.Questions, res.Reply, res.Resume, realcli.Session)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatalf("turn 1 wrote %s (%v)", target, err)
			}
			q := res.Questions[0]
			hash := q.Hash()
			if tt.otherHash {
				hash = question.Call{Tool: "Write", Input: []byte(`{"file_path":"x","content":"y"}`)}.Hash()
			}
			next := realcli.NextTurn(req, res.Resume)
			next.Event = req.Event
			next.Continuing = true
			next.Answers = []question.Answer{{ID: question.NewID(req.RunID, q.Hash()), CallHash: hash, Verdict: tt.verdict,
				Why: "not now", From: question.FromCommand, At: time.Now()}}
			res2, _ := rc.Run(t, next)
			calls, err := fakeagent.Calls(state)
			if err != nil || len(calls) != 2 || calls[1].Stdin != "" || res2.Prompt != "" {
				t.Fatalf("calls %+v (%v), prompt %q; want the second with an empty stdin", calls, err, res2.Prompt)
			}
			b, err := os.ReadFile(target)
			if written := err == nil && string(b) == "hello"; written != tt.wantWritten {
				t.Errorf("turn 2: %s = %q (%v); want written %t", target, b, err, tt.wantWritten)
			}
			if tt.wantHeld {
				if len(res2.Questions) != 1 || res2.Questions[0].Hash() != q.Hash() {
					t.Errorf("turn 2 questions %+v; want the call held again", res2.Questions)
				}
				return
			}
			if len(res2.Questions) != 0 || !strings.HasPrefix(res2.Reply, tt.wantReply) {
				t.Errorf("turn 2: questions %+v, reply %q; want none and %q…", res2.Questions, res2.Reply, tt.wantReply)
			}
		})
	}
}
