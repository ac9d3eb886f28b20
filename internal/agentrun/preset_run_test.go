package agentrun

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/agents/claude"
	"github.com/knotd/knotd/internal/digest"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/transcript"
)

// nextTurn turns a request into the strand's next turn, resuming handle.
func nextTurn(req Request, handle, content string) Request {
	req.Event.Type = strand.Modified
	req.Previous = req.Event.Strand.Content
	req.Event.Strand.Content = []byte(content)
	req.Resume = handle
	req.Turn++
	req.RunID += "2"
	return req
}

func TestClaude_FirstTurnThenResume(t *testing.T) {
	agent, state := fakePreset(t, PresetClaude)
	r := &Runner{}
	req := runRequest(t, agent, planV1)
	first := mustRun(t, r, req)
	if first.Outcome != OutcomeOK || first.Reply != "FAKE REPLY (user messages seen: 1)" || first.Resume != testSession {
		t.Fatalf("turn 1 = %s %q reply %q resume %q; want ok resuming the strand's session", first.Outcome, first.Reason, first.Reply, first.Resume)
	}
	if first.Usage == nil || first.Usage.InputTokens != 10 || first.Usage.CostUSD == 0 {
		t.Errorf("turn 1 usage = %+v", first.Usage)
	}
	second := mustRun(t, r, nextTurn(req, first.Resume, planV2))
	if second.Outcome != OutcomeOK || second.Reply != "FAKE REPLY (user messages seen: 2)" || second.Resume != testSession || second.Restarted != nil {
		t.Fatalf("turn 2 = %s %q reply %q resume %q", second.Outcome, second.Reason, second.Reply, second.Resume)
	}
	calls := mustCalls(t, state)
	want := [][]string{
		{"-p", "--output-format", "stream-json", "--verbose", "--setting-sources", "user", "--permission-mode", "dontAsk", "--session-id", testSession},
		{"-p", "--output-format", "stream-json", "--verbose", "--setting-sources", "user", "--permission-mode", "dontAsk", "--resume", testSession},
	}
	for i, c := range calls {
		if !slices.Equal(c.Args, want[i]) {
			t.Errorf("call %d args = %q; want %q", i+1, c.Args, want[i])
		}
	}
	if !strings.Contains(calls[0].Stdin, "Session: "+testSession+" (new)\nTurn: 1\n") ||
		!strings.Contains(calls[1].Stdin, "Session: "+testSession+" (resumed)\nTurn: 2\n") {
		t.Errorf("the Event Context did not reach Claude on stdin:\n%s\n---\n%s", calls[0].Stdin, calls[1].Stdin)
	}
}

func TestClaude_RecoversLostSessionOnce(t *testing.T) {
	const fresh = "33333333-2222-4333-8444-555555555555"
	tests := []struct {
		name     string
		prepare  func(t *testing.T, r *Runner, req Request) Request
		handle   string
		reason   string
		wantArgs [][]string
	}{
		{
			name: "resume handle unknown in this directory",
			prepare: func(t *testing.T, r *Runner, req Request) Request {
				return nextTurn(req, "99999999-2222-4333-8444-555555555555", planV2)
			},
			handle: "99999999-2222-4333-8444-555555555555",
			reason: "No conversation found with session ID: 99999999-2222-4333-8444-555555555555",
			wantArgs: [][]string{
				{"-p", "--output-format", "stream-json", "--verbose", "--setting-sources", "user", "--permission-mode", "dontAsk", "--resume", "99999999-2222-4333-8444-555555555555"},
				{"-p", "--output-format", "stream-json", "--verbose", "--setting-sources", "user", "--permission-mode", "dontAsk", "--session-id", fresh},
			},
		},
		{
			name: "session id already in use",
			prepare: func(t *testing.T, r *Runner, req Request) Request {
				if res := mustRun(t, r, req); res.Outcome != OutcomeOK {
					t.Fatalf("turn 1 = %+v", res)
				}
				return nextTurn(req, "", planV2) // the handle was lost
			},
			handle: testSession,
			reason: "Error: Session ID " + testSession + " is already in use.",
			wantArgs: [][]string{
				{"-p", "--output-format", "stream-json", "--verbose", "--setting-sources", "user", "--permission-mode", "dontAsk", "--session-id", testSession},
				{"-p", "--output-format", "stream-json", "--verbose", "--setting-sources", "user", "--permission-mode", "dontAsk", "--session-id", testSession},
				{"-p", "--output-format", "stream-json", "--verbose", "--setting-sources", "user", "--permission-mode", "dontAsk", "--session-id", fresh},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent, state := fakePreset(t, PresetClaude)
			r := &Runner{NewSessionID: func() string { return fresh }}
			req := tt.prepare(t, r, runRequest(t, agent, planV1))
			res := mustRun(t, r, req)
			if res.Outcome != OutcomeOK || res.Resume != fresh || res.Reply != "FAKE REPLY (user messages seen: 1)" {
				t.Fatalf("Run = %s %q reply %q resume %q; want ok in a fresh session %s", res.Outcome, res.Reason, res.Reply, res.Resume, fresh)
			}
			if res.Restarted == nil || res.Restarted.Handle != tt.handle || res.Restarted.Reason != tt.reason {
				t.Errorf("Restarted = %+v; want handle %q reason %q", res.Restarted, tt.handle, tt.reason)
			}
			wantLine := "Session: " + testSession + " (new; conversation " + tt.handle + " could not be continued: " + tt.reason + ")\n"
			if !strings.Contains(res.Prompt, wantLine) {
				t.Errorf("prompt does not say the session was restarted (%q):\n%s", wantLine, res.Prompt)
			}
			calls := mustCalls(t, state)
			if len(calls) != len(tt.wantArgs) {
				t.Fatalf("%d calls; want %d", len(calls), len(tt.wantArgs))
			}
			for i, c := range calls {
				if !slices.Equal(c.Args, tt.wantArgs[i]) {
					t.Errorf("call %d args = %q; want %q", i+1, c.Args, tt.wantArgs[i])
				}
			}
			if last := calls[len(calls)-1]; last.Stdin != res.Prompt {
				t.Errorf("the fresh session got a different prompt than the result reports")
			}
		})
	}
}

func TestClaude_RestartsAtMostOnce(t *testing.T) {
	agent, state := fakePreset(t, PresetClaude)
	r := &Runner{NewSessionID: func() string { return testSession }} // a "fresh" id that is in use too
	req := runRequest(t, agent, planV1)
	if res := mustRun(t, r, req); res.Outcome != OutcomeOK {
		t.Fatalf("turn 1 = %+v", res)
	}
	res := mustRun(t, r, nextTurn(req, "", planV2))
	if res.Outcome != OutcomeFailed || !strings.Contains(res.Reason, "exit status 1: Error: Session ID") || res.Restarted == nil {
		t.Errorf("Run = %s %q restarted %+v; want failed after one restart", res.Outcome, res.Reason, res.Restarted)
	}
	if calls := mustCalls(t, state); len(calls) != 3 {
		t.Errorf("%d calls; want 3 (turn 1, the refused turn 2, one fresh attempt)", len(calls))
	}
}

func TestClaude_ModelAndInstructions(t *testing.T) {
	agent, state := fakePreset(t, PresetClaude)
	agent.Model, agent.Instructions = "sonnet", "- review my notes\n- be brief"
	req := runRequest(t, agent, planV1)
	req.Model = "opus"
	res := mustRun(t, &Runner{}, req)
	if res.Outcome != OutcomeOK || res.Model != "opus" {
		t.Fatalf("Run = %+v", res)
	}
	c := mustCalls(t, state)[0]
	want := []string{"-p", "--output-format", "stream-json", "--verbose", "--setting-sources", "user", "--permission-mode", "dontAsk", "--session-id", testSession, "--model", "opus", "--append-system-prompt=- review my notes\n- be brief"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args = %q; want %q", c.Args, want)
	}
	if strings.Contains(c.Stdin, "review my notes") || !strings.HasPrefix(c.Stdin, "## Event Context\n") {
		t.Errorf("instructions went into the prompt too:\n%s", c.Stdin)
	}
}

// TestClaude_HangTimesOut reproduces the fixture README's finding: on an API
// error that never clears, claude -p prints nothing and never exits.
func TestClaude_HangTimesOut(t *testing.T) {
	agent, _ := fakePreset(t, PresetClaude)
	agent.Env[fakeagent.EnvFail], agent.Timeout = "hang", time.Second
	res := mustRun(t, &Runner{Grace: 100 * time.Millisecond}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeTimeout {
		t.Errorf("Run = %s %q; want timeout", res.Outcome, res.Reason)
	}
}

func TestPresets_ResumeRoundTrip(t *testing.T) {
	tests := []struct {
		preset     string
		resumeArgs func(handle string) []string
		usage      Usage
	}{
		{PresetCodex, func(h string) []string {
			return []string{"exec", "--json", "--skip-git-repo-check", "-s", "read-only", "resume", h, "-"}
		},
			Usage{InputTokens: 2400, CacheReadTokens: 200, OutputTokens: 34}},
		{PresetGemini, func(string) []string { return []string{"--acp", "--approval-mode", "default"} },
			Usage{InputTokens: 200, OutputTokens: 20}},
		{PresetLLM, nil, Usage{InputTokens: 100, OutputTokens: 9}},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			agent, state := fakePreset(t, tt.preset)
			r := &Runner{}
			req := runRequest(t, agent, planV1)
			first := mustRun(t, r, req)
			if first.Outcome != OutcomeOK || first.Reply != "FAKE REPLY (user messages seen: 1)" || first.Resume == "" {
				t.Fatalf("turn 1 = %s %q reply %q resume %q", first.Outcome, first.Reason, first.Reply, first.Resume)
			}
			next := nextTurn(req, first.Resume, planV2)
			next.TotalsBefore = first.Totals
			second := mustRun(t, r, next)
			if second.Outcome != OutcomeOK || second.Reply != "FAKE REPLY (user messages seen: 2)" || second.Resume != first.Resume {
				t.Fatalf("turn 2 = %s %q reply %q resume %q; want the conversation continued", second.Outcome, second.Reason, second.Reply, second.Resume)
			}
			if second.Usage == nil || *second.Usage != tt.usage {
				t.Errorf("turn 2 usage = %+v; want %+v", second.Usage, tt.usage)
			}
			if !strings.Contains(second.Prompt, "(resumed)\nTurn: 2\n") {
				t.Errorf("turn 2 prompt does not say resumed:\n%s", second.Prompt)
			}
			calls := mustCalls(t, state)
			last := calls[len(calls)-1]
			if tt.preset == PresetLLM { // its last call reads the conversation id
				last = calls[len(calls)-2]
				if !slices.Contains(last.Args, "--cid") || !slices.Contains(last.Args, first.Resume) {
					t.Errorf("turn 2 args = %q; want --cid %s", last.Args, first.Resume)
				}
			}
			if tt.resumeArgs != nil && !slices.Equal(last.Args, tt.resumeArgs(first.Resume)) {
				t.Errorf("turn 2 args = %q; want %q", last.Args, tt.resumeArgs(first.Resume))
			}
			if last.Stdin != second.Prompt {
				t.Errorf("turn 2 stdin is not the prompt")
			}
		})
	}
}

func TestLLM_UsesPrivateDatabase(t *testing.T) {
	agent, state := fakePreset(t, PresetLLM)
	agent.Instructions = "Be brief."
	req := runRequest(t, agent, planV1)
	res := mustRun(t, &Runner{}, req)
	if res.Outcome != OutcomeOK {
		t.Fatalf("Run = %+v", res)
	}
	db := filepath.Join(req.StateDir, "llm", testSession+".db")
	if entries, _ := os.ReadDir(req.Vault); len(entries) != 0 {
		t.Errorf("the llm preset wrote into the vault: %v", entries)
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("private database: %v", err)
	}
	calls := mustCalls(t, state)
	if len(calls) != 2 || calls[0].Args[0] != "prompt" || calls[1].Args[0] != "logs" {
		t.Fatalf("calls = %+v; want prompt, then logs", calls)
	}
	if !slices.Contains(calls[0].Args, "--system=Be brief.") || strings.Contains(calls[0].Stdin, "Be brief.") {
		t.Errorf("instructions: args %q; want them as --system only", calls[0].Args)
	}
}

func TestOllama_StartsAfreshEachTurn(t *testing.T) {
	agent, state := fakePreset(t, PresetOllama)
	agent.Instructions = "You review notes."
	req := runRequest(t, agent, planV1)
	req = nextTurn(nextTurn(req, "", planV2), "some-handle", planV1)
	res := mustRun(t, &Runner{}, req)
	if res.Outcome != OutcomeOK || res.Resume != "" {
		t.Fatalf("Run = %s %q resume %q", res.Outcome, res.Reason, res.Resume)
	}
	c := mustCalls(t, state)[0]
	if !slices.Equal(c.Args, []string{"run", "--hidethinking", "llama3.2"}) {
		t.Errorf("args = %q", c.Args)
	}
	if !strings.HasPrefix(c.Stdin, "You review notes.\n\n## Event Context\n") || !strings.Contains(c.Stdin, "(new)\nTurn: 3\n") {
		t.Errorf("prompt = %q; want instructions first and a new session at turn 3", preview(c.Stdin, 200))
	}
}

func TestPresets_ReportFailures(t *testing.T) {
	tests := []struct {
		preset string
		reason []string
	}{
		{PresetClaude, []string{"exit status 1", "API Error: 401"}},
		{PresetCodex, []string{"exit status 1", "unexpected status 401 Unauthorized"}},
		{PresetGemini, []string{"reported an error", "API key not valid", "ACP error 401"}},
		{PresetLLM, []string{"exit status 1", "No key found"}},
		{PresetOllama, []string{"exit status 1", "pull model manifest"}},
	}
	for _, tt := range tests {
		t.Run(tt.preset, func(t *testing.T) {
			agent, _ := fakePreset(t, tt.preset)
			agent.Env[fakeagent.EnvFail] = "error"
			res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
			if res.Outcome != OutcomeFailed {
				t.Fatalf("Run = %s; want failed", res.Outcome)
			}
			for _, w := range tt.reason {
				if !strings.Contains(res.Reason, w) {
					t.Errorf("reason %q does not mention %q", res.Reason, w)
				}
			}
		})
	}
}

func TestRunner_DigestRunsInProcess(t *testing.T) {
	for _, agent := range []Agent{{}, {Name: "notes", Preset: PresetDigest}} {
		req := runRequest(t, agent, planV2)
		req = nextTurn(req, "", planV2)
		req.Previous = []byte(planV1)
		res := mustRun(t, &Runner{}, req)
		want := cleanReply(digest.Of(strand.Modified, "ideas/plan.md", []byte(planV1), []byte(planV2)))
		if res.Outcome != OutcomeOK || res.Reply != want || res.Preset != PresetDigest || res.ExitCode != -1 || res.Argv != nil {
			t.Errorf("Run(%+v) = %+v; want ok with the digest %q", agent, res, want)
		}
	}
}

// TestClaude_LongStreamKeepsItsReply: a stream longer than the output kept
// (a tool's long output) still gives its reply, from the result line
// read as it arrived; the output kept says it was cut.
func TestClaude_LongStreamKeepsItsReply(t *testing.T) {
	agent, _ := fakePreset(t, PresetClaude)
	agent.Env[fakeagent.EnvPad] = strconv.Itoa(256 << 10)
	res := mustRun(t, &Runner{MaxStdout: 64 << 10}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeOK || res.Reply != "FAKE REPLY (user messages seen: 1)" || res.Resume != testSession {
		t.Fatalf("Run = %s %q reply %q resume %q; want the reply of the result line", res.Outcome, res.Reason, res.Reply, res.Resume)
	}
	if !res.StdoutTruncated || res.StdoutBytes <= 256<<10 {
		t.Errorf("stdout truncated %v after %d bytes; want the stream cut at the cap", res.StdoutTruncated, res.StdoutBytes)
	}
}

// TestClaude_LongStreamKeepsItsBlocks: the run's message holds every block
// of a stream longer than the output kept, read line by line, and is not
// marked truncated.
func TestClaude_LongStreamKeepsItsBlocks(t *testing.T) {
	agent, _ := fakePreset(t, PresetClaude)
	agent.Env[fakeagent.EnvPad] = strconv.Itoa(256 << 10)
	res := mustRun(t, &Runner{MaxStdout: 64 << 10}, runRequest(t, agent, planV1))
	if res.Message == nil || res.Message.Truncated {
		t.Fatalf("Message = %+v; want one, not truncated", res.Message)
	}
	var types []transcript.BlockType
	for _, b := range res.Message.Blocks {
		types = append(types, b.Type)
	}
	want := []transcript.BlockType{transcript.BlockToolResult, transcript.BlockThinking, transcript.BlockText}
	if !slices.Equal(types, want) || len(res.Message.Blocks[0].Content) != 256<<10 {
		t.Errorf("blocks %v; want %v with the whole tool result", types, want)
	}
}

// TestClaude_OutputArrivesWhileRunning: the blocks of Claude's assistant
// message reach Request.OnOutput while the agent still runs. The fake
// waits, after printing them, for a file that only OnOutput creates: a
// runner that handed blocks over at the end would time the run out.
func TestClaude_OutputArrivesWhileRunning(t *testing.T) {
	agent, _ := fakePreset(t, PresetClaude)
	gate := filepath.Join(t.TempDir(), "seen")
	agent.Env[fakeagent.EnvGate] = gate
	agent.Timeout = 30 * time.Second
	req := runRequest(t, agent, planV1)
	var live []transcript.AssistantMessage
	req.OnOutput = func(m transcript.AssistantMessage) {
		live = append(live, m)
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Error(err)
		}
	}
	res := mustRun(t, &Runner{}, req)
	if res.Outcome != OutcomeOK {
		t.Fatalf("Run = %s %q; want ok", res.Outcome, res.Reason)
	}
	if len(live) != 1 || live[0].Format != claude.FormatStreamJSON || len(live[0].Blocks) != 2 ||
		live[0].Blocks[1].Text != "FAKE REPLY (user messages seen: 1)" {
		t.Fatalf("OnOutput got %+v; want the assistant message's two blocks", live)
	}
	if !slices.EqualFunc(live[0].Blocks, res.Message.Blocks, func(a, b transcript.Block) bool { return a.Text == b.Text && a.Type == b.Type }) {
		t.Errorf("Result.Message %+v does not start with the blocks handed out live", res.Message.Blocks)
	}
}

// TestText_ReplyCutSaysSo: a plain-text reply cut at the output limit ends
// with a line that says so, and its message is marked truncated.
func TestText_ReplyCutSaysSo(t *testing.T) {
	agent := Agent{Command: []string{fakeagent.Program(t)}, Env: fakeagent.Env(fakeagent.Huge, "")}
	res := mustRun(t, &Runner{MaxStdout: 4 << 10}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeOK || !strings.HasSuffix(res.Reply, "[knotd: the reply was cut here, at the 4096-byte standard output limit]") {
		t.Fatalf("Run = %s %q, reply ending %q; want ok and the cut said", res.Outcome, res.Reason, res.Reply[max(len(res.Reply)-120, 0):])
	}
	if res.Message == nil || !res.Message.Truncated {
		t.Errorf("Message = %+v; want it marked truncated", res.Message)
	}
}

// TestPlain_OutputArrivesWhileRunning: the standard output of an agent
// that prints plain text or JSON (a command, llm, ollama) reaches
// Request.OnOutput while the agent still runs. The fake waits, after
// printing, for a file that only OnOutput creates: a runner that handed
// the output over at the end would time the run out. The reply is what it
// always was, and the message starts with the blocks handed out live.
func TestPlain_OutputArrivesWhileRunning(t *testing.T) {
	for _, tc := range []struct {
		name       string
		agent      func() Agent
		live, last string // text handed out live; the message's last block
	}{
		{"command text", func() Agent {
			return Agent{Command: []string{fakeagent.Program(t)}, Env: fakeagent.Env(fakeagent.Echo, "")}
		}, "ECHO: ## Event Context\n", "ECHO: ## Event Context\n"},
		{"command json", func() Agent {
			return Agent{Command: []string{fakeagent.Program(t), "lines"}, Env: fakeagent.Env(fakeagent.JSON, ""),
				Output: OutputJSON, Reply: "/answer/text"}
		}, `{"type": "progress", "answer": {"note": "working"}}` + "\nwarning: this line is not JSON\n", "JSON REPLY to "},
		{"llm", func() Agent { a, _ := fakePreset(t, PresetLLM); return a }, "FAKE REPLY (user messages seen: 1)\n", "FAKE REPLY (user messages seen: 1)\n"},
		{"ollama", func() Agent { a, _ := fakePreset(t, PresetOllama); return a }, "FAKE REPLY (user messages seen: 1)\n", "FAKE REPLY (user messages seen: 1)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent := tc.agent()
			gate := filepath.Join(t.TempDir(), "seen")
			agent.Env[fakeagent.EnvGate] = gate
			agent.Timeout = 20 * time.Second
			req := runRequest(t, agent, planV1)
			var live []transcript.Block
			var text strings.Builder
			req.OnOutput = func(m transcript.AssistantMessage) {
				if m.Format != transcript.FormatText {
					t.Errorf("live message in format %q; want text", m.Format)
				}
				live = append(live, m.Blocks...)
				for _, b := range m.Blocks {
					if b.Type != transcript.BlockText || b.Fidelity != transcript.TextOnly {
						t.Errorf("live block %+v; want text-only text", b)
					}
					text.WriteString(b.Text)
				}
				if strings.Contains(text.String(), tc.live) {
					if err := os.WriteFile(gate, nil, 0o600); err != nil {
						t.Error(err)
					}
				}
			}
			res := mustRun(t, &Runner{}, req)
			if res.Outcome != OutcomeOK {
				t.Fatalf("Run = %s %q; want ok (the output did not arrive while the agent ran)", res.Outcome, res.Reason)
			}
			if !strings.HasPrefix(text.String(), tc.live) {
				t.Errorf("output handed out live %q; want it to start with %q", text.String(), tc.live)
			}
			if tc.name != "command json" && res.Reply != strings.TrimSpace(tc.live) {
				t.Errorf("reply %q; want %q", res.Reply, strings.TrimSpace(tc.live))
			}
			if res.Message == nil || len(res.Message.Blocks) < len(live) ||
				!slices.EqualFunc(res.Message.Blocks[:len(live)], live, func(a, b transcript.Block) bool {
					return a.Type == b.Type && a.Fidelity == b.Fidelity && a.Text == b.Text
				}) ||
				!strings.HasPrefix(res.Message.Blocks[len(res.Message.Blocks)-1].Text, tc.last) {
				t.Errorf("Result.Message %+v; want the blocks handed out live %+v first, ending with %q", res.Message, live, tc.last)
			}
		})
	}
}
