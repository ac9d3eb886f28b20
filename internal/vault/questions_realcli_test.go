//go:build unix

package vault

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/agents/gemini/geminitest"
	"github.com/knotd/knotd/internal/question"
)

// envYAML is a flow mapping of environment variables for an agent's env.
func envYAML(env []string) string {
	var kv []string
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		kv = append(kv, fmt.Sprintf("%s: %q", k, v))
	}
	return "{" + strings.Join(kv, ", ") + "}"
}

// answerInNote writes the user's answer into the note's frontmatter, as a
// user in Obsidian's Properties or in vim would, keeping the body.
func answerInNote(e *env, rel, body, answer string) {
	e.write(rel, "---\nknot_answer: "+answer+"\n---\n"+body)
}

// TestQuestions_RealClaude is issue 26's "done when" with the real Claude
// Code CLI (the claude preset at permissions: ask, knotd's own hook: this
// test binary's `hook`) against the loopback stand-in whose model asks to
// Write a file or to run a command: the call is held and the tie-off shows
// the question; a restart keeps it; an answer naming another id does
// nothing; an approval written into the note makes the file appear and the
// reply follow; a denial leaves the file absent and the model is told
// why; knotd approve (AnswerQuestion from the command) answers the same
// way.
func TestQuestions_RealClaude(t *testing.T) {
	bin := claudetest.ClaudeCLI(t)
	for _, tt := range []struct {
		name    string
		bash    bool
		verdict question.Verdict
		why     string
		inNote  bool
	}{
		{name: "write approved in the note", verdict: question.Approve, inNote: true},
		{name: "write denied in the note", verdict: question.Deny, why: "not this file", inNote: true},
		{name: "command approved by knotd approve", bash: true, verdict: question.Approve},
		{name: "command denied by knotd deny", bash: true, verdict: question.Deny, why: "no commands today"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := claudetest.NewAnthropic(t)
			e := newEnv(t)
			e.userConfig(fmt.Sprintf("default_agent: c\nagents:\n  c:\n    preset: claude\n    command: [%q]\n    permissions: ask\n    env: %s\n",
				bin, envYAML(api.ClaudeEnv(t.TempDir()))))
			call := agenttest.ToolCall{ID: "toolu_e2e_write", Name: "Write",
				Input: map[string]string{"file_path": e.abs("made.txt"), "content": "made by the model\n"}}
			if tt.bash {
				call = agenttest.ToolCall{ID: "toolu_e2e_bash", Name: "Bash",
					Input: map[string]string{"command": "echo ran > made.txt", "description": "Make made.txt"}}
			}
			api.SetAnswer(func(r claudetest.Request) agenttest.Reply {
				for _, res := range r.ToolResults() {
					if res.ID == call.ID {
						if res.IsError {
							return agenttest.Reply{Text: "TOLD REFUSED: " + res.Output}
						}
						return agenttest.Reply{Text: "TOLD DONE: " + res.Output}
					}
				}
				return agenttest.Reply{Text: "I would like to make made.txt.", ToolCalls: []agenttest.ToolCall{call}}
			})
			v := e.open()
			e.once(v, false) // first contact: nothing to adopt
			body := "Please make made.txt.\n"
			e.write("n.md", body)
			e.once(v, false)

			// The call is held: no file, a question in the tie-off.
			require.False(t, e.exists("made.txt"), "the held call did not run")
			qs, err := v.Questions()
			mustDo(t, err)
			require.Len(t, qs, 1)
			q := qs[0]
			a := &askEnv{env: e}
			kinds := a.kinds()
			require.Equal(t, "question", kinds[len(kinds)-1], "the tie-off shows the question")
			secs := e.sections("n.md")
			shown := secs[len(secs)-1].Body
			require.Contains(t, shown, q.ID)
			require.Contains(t, shown, "knot_answer: approve "+q.ID, "the question says how to answer in the note")
			if tt.bash {
				require.Contains(t, shown, "echo ran > made.txt")
			} else {
				require.Contains(t, shown, "made by the model", "the edit's diff is shown")
			}

			// A restart keeps the question.
			e.close(v)
			v = e.open()
			qs, err = v.Questions()
			mustDo(t, err)
			require.Len(t, qs, 1, "the question survives a restart")
			require.Equal(t, q.ID, qs[0].ID)

			// An answer naming another id does nothing.
			before := len(e.sections("n.md"))
			requests := len(api.MessageRequests())
			answerInNote(e, "n.md", body, "approve "+strings.Repeat("0", question.IDLen))
			e.once(v, false)
			require.Len(t, e.sections("n.md"), before, "an answer to no question writes nothing")
			require.Len(t, api.MessageRequests(), requests, "and runs nothing")
			require.False(t, e.exists("made.txt"))
			qs, err = v.Questions()
			mustDo(t, err)
			require.Len(t, qs, 1, "the question still waits")

			// The answer.
			if tt.inNote {
				answer := string(tt.verdict) + " " + q.ID
				if tt.why != "" {
					answer += " " + tt.why
				}
				answerInNote(e, "n.md", body, answer)
			} else {
				_, err := v.AnswerQuestion(q.ID, tt.verdict, tt.why, question.FromCommand)
				mustDo(t, err)
			}
			e.once(v, false)
			qs, err = v.Questions()
			mustDo(t, err)
			require.Empty(t, qs, "the question is answered")
			secs = e.sections("n.md")
			reply := secs[len(secs)-1].Body
			require.Equal(t, []string{"question", string(tt.verdict), "run"}, a.kinds()[len(a.kinds())-3:], "the answer, then the turn it continued")
			if tt.verdict == question.Approve {
				want := "made by the model\n"
				if tt.bash {
					want = "ran\n"
				}
				require.Equal(t, want, e.read("made.txt"), "the approved call ran")
				require.Contains(t, reply, "TOLD DONE", "the reply follows the call's result")
			} else {
				require.False(t, e.exists("made.txt"), "the denied call did not run")
				require.Contains(t, reply, "TOLD REFUSED", "the model is told")
				require.Contains(t, reply, tt.why, "with the user's reason")
			}
		})
	}
}

// TestQuestions_RealGemini is the same with the real Gemini CLI (an ACP
// agent: it asks while it runs) against its stand-in, whose model asks to
// write a file or to run a command. Nobody answers within ask_wait (1s),
// so the call is refused for now and the question stays open, across a
// restart; an answer naming another id does nothing; the user's later
// answer in the note continues the note: the agent is told the answer in
// its next turn, asks again, and an approval lets the call through (the
// file appears, the reply follows), a denial refuses it (no file) and the
// model is told the reason.
func TestQuestions_RealGemini(t *testing.T) {
	bin := geminitest.GeminiCLI(t)
	for _, tt := range []struct {
		name    string
		bash    bool
		verdict question.Verdict
		why     string
	}{
		{name: "write approved", verdict: question.Approve},
		{name: "write denied", verdict: question.Deny, why: "not this file"},
		{name: "command approved", bash: true, verdict: question.Approve},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api := geminitest.NewGemini(t)
			e := newEnv(t)
			e.userConfig(fmt.Sprintf("default_agent: g\nagents:\n  g:\n    preset: gemini\n    command: [%q]\n    permissions: ask\n    ask_wait: 1s\n    env: %s\n",
				bin, envYAML(api.GeminiEnv(t.TempDir(), true))))
			call := geminitest.GeminiFunctionCall{Name: "write_file",
				Args: map[string]any{"file_path": e.abs("made.txt"), "content": "made by the model\n"}}
			if tt.bash {
				call = geminitest.GeminiFunctionCall{Name: "run_shell_command",
					Args: map[string]any{"command": "echo ran > made.txt", "description": "Make made.txt"}}
			}
			v := e.open()
			e.once(v, false)
			body := "Please make made.txt.\n"
			e.write("n.md", body)
			api.QueueFunctionCall(call)
			e.once(v, false)

			require.False(t, e.exists("made.txt"), "the unanswered call was refused for now")
			qs, err := v.Questions()
			mustDo(t, err)
			if len(qs) != 1 {
				for _, s := range e.sections("n.md") {
					t.Logf("section %+v", s)
				}
				t.Logf("function responses %+v", api.FunctionResponses())
			}
			require.Len(t, qs, 1, "the question stays open")
			q := qs[0]
			a := &askEnv{env: e}
			require.Contains(t, a.kinds(), "question", "the tie-off shows the question")

			e.close(v)
			v = e.open()
			qs, err = v.Questions()
			mustDo(t, err)
			require.Len(t, qs, 1, "the question survives a restart")

			before := len(e.sections("n.md"))
			chats := len(api.ChatRequests())
			answerInNote(e, "n.md", body, "approve "+strings.Repeat("0", question.IDLen))
			e.once(v, false)
			require.Len(t, e.sections("n.md"), before, "an answer to no question writes nothing")
			require.Len(t, api.ChatRequests(), chats, "and runs nothing")

			answer := string(tt.verdict) + " " + q.ID
			if tt.why != "" {
				answer += " " + tt.why
			}
			answerInNote(e, "n.md", body, answer)
			api.QueueFunctionCall(call) // told of the answer, the model asks again
			e.once(v, false)
			qs, err = v.Questions()
			mustDo(t, err)
			require.Empty(t, qs, "the question is answered, and the call asked again is decided by the answer")
			kinds := a.kinds()
			require.Equal(t, []string{string(tt.verdict), "run"}, kinds[len(kinds)-2:])
			var told bool
			for _, r := range api.ChatRequests()[chats:] {
				word := map[question.Verdict]string{question.Approve: " approved (", question.Deny: " denied ("}[tt.verdict]
				if strings.Contains(string(r.Body), "Answer: "+q.ID+word) && (tt.why == "" || strings.Contains(string(r.Body), tt.why)) {
					told = true
				}
			}
			require.True(t, told, "the next turn tells the model the answer")
			if tt.verdict == question.Approve {
				want := "made by the model\n"
				if tt.bash {
					want = "ran\n"
				}
				require.Equal(t, want, e.read("made.txt"), "the approved call ran")
			} else {
				require.False(t, e.exists("made.txt"), "the denied call did not run")
			}
		})
	}
}
