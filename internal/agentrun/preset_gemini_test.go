package agentrun

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/strand"
)

// geminiSent returns the method of each request knotd sent, and
// "answer:<optionId or outcome>" for each answer to a permission request.
func geminiSent(t *testing.T, sent []string) []string {
	t.Helper()
	var out []string
	for _, s := range sent {
		if rest, ok := strings.CutPrefix(s, "finish: "); ok {
			out = append(out, "finish: "+rest)
			continue
		}
		var m struct {
			Method string `json:"method"`
			Result *struct {
				Outcome struct {
					Outcome  string `json:"outcome"`
					OptionID string `json:"optionId"`
				} `json:"outcome"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("knotd sent %q: %v", s, err)
		}
		switch {
		case m.Method != "":
			out = append(out, m.Method)
		case m.Result != nil && m.Result.Outcome.OptionID != "":
			out = append(out, "answer:"+m.Result.Outcome.OptionID)
		case m.Result != nil:
			out = append(out, "answer:"+m.Result.Outcome.Outcome)
		default:
			out = append(out, "other:"+s)
		}
	}
	return out
}

// TestGemini_RecordedACP: the conversation reads what the real Gemini CLI
// printed in each recorded case (agents/gemini/testdata/recorded-acp), sends what
// the preset sent then, and tells each outcome apart.
func TestGemini_RecordedACP(t *testing.T) {
	for _, tc := range []struct {
		name   string
		perm   Permissions
		reply  string
		usage  *Usage
		lost   string
		err    string
		note   string
		sent   []string
		handle bool // the handle is the session's id
	}{
		{name: "acp-new", reply: "MOCK REPLY (user messages seen: 1)", usage: &Usage{InputTokens: 100, OutputTokens: 9},
			sent: []string{"initialize", "session/new", "session/prompt"}, handle: true},
		{name: "acp-load", reply: "MOCK REPLY (user messages seen: 2)", usage: &Usage{InputTokens: 200, OutputTokens: 9},
			sent: []string{"initialize", "session/load", "session/prompt"}, handle: true},
		{name: "acp-load-unknown", lost: "No previous sessions found for this project.", err: "No previous sessions found",
			sent: []string{"initialize", "session/load"}},
		{name: "acp-http-401", err: "UNAUTHENTICATED: Request had invalid authentication credentials. (ACP error 401)",
			sent: []string{"initialize", "session/new", "session/prompt"}, handle: true},
		{name: "acp-untrusted", reply: "MOCK REPLY (user messages seen: 1)", usage: &Usage{InputTokens: 100, OutputTokens: 9},
			note: "does not trust the vault folder", sent: []string{"initialize", "session/new", "session/prompt"}, handle: true},
		// Two model calls: the tool call and the reply.
		{name: "acp-write-read-only", perm: PermReadOnly, reply: "MOCK REPLY (user messages seen: 1)", usage: &Usage{InputTokens: 200, OutputTokens: 14},
			note: `"Writing to notes/out.md" (a tool call of kind edit): refused (permissions read-only)`,
			sent: []string{"initialize", "session/new", "session/prompt", "answer:cancel"}, handle: true},
		{name: "acp-write-edit", perm: PermEdit, reply: "MOCK REPLY (user messages seen: 1)", usage: &Usage{InputTokens: 200, OutputTokens: 14},
			note: `"Writing to notes/out.md" (a tool call of kind edit): allowed (permissions edit)`,
			sent: []string{"initialize", "session/new", "session/prompt", "answer:proceed_once"}, handle: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exit, stdout, stderr := recorded(t, geminiRecordedACP, tc.name)
			stdout = awaitPromptAfterCommands(stdout)
			resume := ""
			if b, err := os.ReadFile(filepath.Join(geminiRecordedACP, tc.name+".resume")); err == nil {
				resume = strings.TrimSpace(string(b))
			}
			a := &attempt{req: &Request{Vault: "/vault", Agent: Agent{Preset: PresetGemini, Permissions: tc.perm}}, prompt: "the prompt", resume: resume}
			p, sent := talkACP(t, geminiDriver().converse(a), stdout, stderr, nil)
			if exit != 0 {
				t.Errorf("the recorded exit status is %d; want 0", exit)
			}
			if got := geminiSent(t, sent); !slices.Equal(got, tc.sent) {
				t.Errorf("sent %q; want %q", got, tc.sent)
			}
			if p.reply != tc.reply || !strings.HasPrefix(p.lost, tc.lost) || (tc.lost == "") != (p.lost == "") ||
				!strings.Contains(p.agentErr, tc.err) || (tc.err == "") != (p.agentErr == "") {
				t.Errorf("parsed reply %q lost %q err %q; want %q, %q, %q", p.reply, p.lost, p.agentErr, tc.reply, tc.lost, tc.err)
			}
			if (p.usage == nil) != (tc.usage == nil) || (p.usage != nil && *p.usage != *tc.usage) {
				t.Errorf("usage %+v; want %+v", p.usage, tc.usage)
			}
			// Gemini CLI sends no usage_update: the context is the turn's
			// input tokens (its model calls summed), for max_context.
			if tc.usage != nil && (p.context != tc.usage.InputTokens || p.window != 0) {
				t.Errorf("context %d of %d tokens; want the turn's input %d, no size", p.context, p.window, tc.usage.InputTokens)
			}
			if tc.handle && (p.handle == "" || !strings.Contains(stdout, p.handle)) {
				t.Errorf("handle %q; want the session's id", p.handle)
			}
			if resume != "" && tc.lost == "" && p.handle != resume {
				t.Errorf("handle %q; want the loaded session %s", p.handle, resume)
			}
			noted := tc.note == ""
			for _, n := range p.notes {
				noted = noted || strings.Contains(n, tc.note)
			}
			if !noted || (tc.note == "" && len(p.notes) > 0) {
				t.Errorf("notes %q; want one with %q", p.notes, tc.note)
			}
			lost, ok := geminiDriver().sessionLost(exit, p, stderr)
			if ok != (tc.lost != "") || lost != p.lost {
				t.Errorf("sessionLost = %q, %v; want %v", lost, ok, tc.lost != "")
			}
		})
	}
}

// TestGemini_PromptWaitsForTheReplay: after session/load the prompt is
// sent only once the replay of the history is over (available_commands_
// update), and replayed messages are not the reply, whatever order the
// load's response and the replay come in.
func TestGemini_PromptWaitsForTheReplay(t *testing.T) {
	update := func(kind, text string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"` + kind +
			`","content":{"type":"text","text":"` + text + `"}}}}`
	}
	commands := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}`
	loaded := `{"jsonrpc":"2.0","id":2,"result":{"modes":null}}`
	for name, lines := range map[string][]string{
		"response first": {loaded, update("user_message_chunk", "ctx"), update("user_message_chunk", "turn 1"), update("agent_message_chunk", "OLD"), commands},
		"replay first":   {update("user_message_chunk", "ctx"), update("agent_message_chunk", "OLD"), commands, loaded},
		"interleaved":    {update("user_message_chunk", "ctx"), loaded, update("user_message_chunk", "turn 1"), update("agent_message_chunk", "OLD"), commands},
		// Turn 2 failed at the API: the history ends with its prompt.
		"unanswered prompt": {update("user_message_chunk", "ctx"), loaded, update("user_message_chunk", "turn 1"), update("agent_message_chunk", "OLD"),
			update("user_message_chunk", "turn 2"), commands},
	} {
		t.Run(name, func(t *testing.T) {
			c := geminiDriver().converse(&attempt{req: &Request{Vault: "/v"}, prompt: "p", resume: "s-1"})
			out := []string{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}`}
			out = append(out, lines...)
			out = append(out, awaitSent+"session/prompt", update("agent_message_chunk", "NEW "), update("agent_message_chunk", "REPLY"),
				`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
			var log []string // what was fed ("in:N") and sent, in order
			p, sent := talkACP(t, c, strings.Join(out, "\n")+"\n", "", func(event string) { log = append(log, event) })
			if got := geminiSent(t, sent); !slices.Equal(got, []string{"initialize", "session/load", "session/prompt"}) {
				t.Errorf("sent %q; want initialize, session/load, session/prompt", got)
			}
			prompt, replayEnd := slices.Index(log, "out:session/prompt"), slices.Index(log, fmt.Sprintf("in:%d", len(out)-5))
			if prompt < 0 || replayEnd < 0 || prompt < replayEnd {
				t.Errorf("events %q: want session/prompt sent only after line %d (the replay's end)", log, len(out)-5)
			}
			for _, m := range sent {
				if strings.Contains(m, `"session/load"`) || strings.Contains(m, `"session/prompt"`) {
					if !strings.Contains(m, `"sessionId":" s-1"`) {
						t.Errorf("sent %s; want the loaded session named \" s-1\" (geminiLoadID)", m)
					}
				}
			}
			if p.agentErr != "" || p.reply != "NEW REPLY" || p.handle != "s-1" {
				t.Errorf("finish = %+v; want the new reply only", p)
			}
		})
	}
}

// TestGemini_ReplayGoesOnAfterThePrompt: Gemini CLI 0.61.0 replays a
// loaded session's history without waiting for it, and sends
// available_commands_update from a timer: once the history outgrows the
// pipe, that update comes in the middle of the replay, and the rest of the
// replay after knotd sent the prompt. The fake CLI (midreplay) does so;
// each turn's reply is still the live turn's, nothing of it set aside, and
// the replayed updates after the prompt are noted. Before the fix, the
// second turn's reply held the first's, and the third's was lost ("empty
// reply").
func TestGemini_ReplayGoesOnAfterThePrompt(t *testing.T) {
	agent, _ := fakePreset(t, PresetGemini)
	agent.Env[fakeagent.EnvFail] = "midreplay"
	req := runRequest(t, agent, planV1)
	for turn := 1; turn <= 4; turn++ {
		if turn > 1 {
			req.Event.Type, req.Turn = strand.Modified, turn
		}
		res := mustRun(t, &Runner{}, req)
		want := fmt.Sprintf("FAKE REPLY (user messages seen: %d)", turn)
		if res.Outcome != OutcomeOK || res.Reply != want || res.Restarted != nil {
			t.Fatalf("turn %d: Run = %s %q reply %q restarted %+v; want ok with %q\nstdout %s", turn, res.Outcome, res.Reason, res.Reply, res.Restarted, want, res.Stdout)
		}
		// The replayed updates after the prompt: turn 1's reply, then a
		// prompt and reply for each turn after it.
		if late := 2*(turn-1) - 1; turn > 1 && (res.Message == nil || !slices.Contains(res.Message.Notes, fmt.Sprintf("%d of them came after the prompt was sent (the replay was still going on)", late))) {
			t.Errorf("turn %d: message %+v; want a note on the %d replayed updates after the prompt", turn, res.Message, late)
		}
		req.Resume = res.Resume
	}
}

// TestGemini_SetAsideSaysSo: when the decoder took every update after the
// prompt for the replayed history and no reply is left, the run fails
// saying that knotd set them aside, not as the agent's empty reply.
func TestGemini_SetAsideSaysSo(t *testing.T) {
	update := func(kind, text string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"` + kind +
			`","content":{"type":"text","text":"` + text + `"}}}}`
	}
	out := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}`,
		update("user_message_chunk", "ctx"),
		`{"jsonrpc":"2.0","id":2,"result":{"modes":null}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}}`,
		awaitSent + "session/prompt",
		// A user message after the prompt: the replay goes on, and the
		// answer after it is taken for the history's.
		update("user_message_chunk", "turn 1"),
		update("agent_message_chunk", "THE REPLY"),
		`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`,
	}
	c := geminiDriver().converse(&attempt{req: &Request{Vault: "/v"}, prompt: "p", resume: "s-1"})
	p, sent := talkACP(t, c, strings.Join(out, "\n")+"\n", "", nil)
	const want = "finish: knotd took the 2 updates Gemini CLI sent after the prompt for the loaded session's replayed history, and found no reply after them: knotd's failure, not the agent's"
	if !slices.ContainsFunc(sent, func(s string) bool { return strings.HasPrefix(s, want) }) || p.agentErr != "" {
		t.Errorf("sent %q, agentErr %q; want the run to fail with %q", sent, p.agentErr, want)
	}
}

// TestGemini_OutputAfterTheEndIsRead: what the CLI prints after the
// prompt's response (while it exits) is still read into the run's message.
func TestGemini_OutputAfterTheEndIsRead(t *testing.T) {
	c := geminiDriver().converse(&attempt{req: &Request{Vault: "/v"}, prompt: "p"})
	out := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{}}}`,
		`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s-1"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"late"}}}}`,
	}
	p, sent := talkACP(t, c, strings.Join(out, "\n")+"\n", "", nil)
	if got := geminiSent(t, sent); !slices.Equal(got, []string{"initialize", "session/new", "session/prompt"}) {
		t.Errorf("sent %q; want initialize, session/new, session/prompt", got)
	}
	if p.agentErr != "" || p.message == nil || len(p.message.Blocks) != 1 || p.message.Blocks[0].Text != "late" {
		t.Errorf("finish = %+v (sent %q); want the block printed after the end", p.message, sent)
	}
}

func TestGeminiPermit(t *testing.T) {
	options := acpPermissionRequest{}
	for _, o := range []struct{ id, kind string }{{"proceed_always", "allow_always"}, {"proceed_once", "allow_once"}, {"cancel", "reject_once"}} {
		options.Options = append(options.Options, struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		}{o.id, o.kind})
	}
	for _, tc := range []struct {
		kind                 string
		readOnly, edit, full bool
	}{
		{"read", true, true, true},
		{"search", true, true, true},
		{"think", true, true, true},
		{"edit", false, true, true},
		{"delete", false, true, true},
		{"move", false, true, true},
		{"execute", false, false, true},
		{"fetch", false, false, true},
		{"switch_mode", false, false, true},
		{"other", false, false, true},
		{"something new", false, false, true},
	} {
		req := options
		req.ToolCall.Kind = tc.kind
		for perm, want := range map[Permissions]bool{PermReadOnly: tc.readOnly, PermEdit: tc.edit, PermFull: tc.full} {
			id, allowed := acpPermit(perm, req)
			wantID := "cancel"
			if want {
				wantID = "proceed_once"
			}
			if allowed != want || id != wantID {
				t.Errorf("acpPermit(%s, %s) = %q, %v; want %q, %v", perm, tc.kind, id, allowed, wantID, want)
			}
		}
	}
	// No option that says so: cancelled, refused.
	if id, allowed := acpPermit(PermFull, acpPermissionRequest{}); id != "" || allowed {
		t.Errorf("acpPermit(no options) = %q, %v; want cancelled", id, allowed)
	}
}

// TestGemini_Permissions: through the runner, a permission request is
// answered per Agent.Permissions (the fake replies with the answer).
func TestGemini_Permissions(t *testing.T) {
	for perm, want := range map[Permissions]string{"": "cancel", PermReadOnly: "cancel", PermEdit: "proceed_once", PermFull: "proceed_once"} {
		agent, _ := fakePreset(t, PresetGemini)
		agent.Env[fakeagent.EnvFail], agent.Permissions = "permission", perm
		res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
		if res.Outcome != OutcomeOK || !strings.HasSuffix(res.Reply, "[permission: "+want+"]") {
			t.Errorf("permissions %q: Run = %s %q reply %q; want the answer %s", perm, res.Outcome, res.Reason, res.Reply, want)
		}
	}
}

// TestGemini_UntrustedFolder: Gemini CLI runs in a folder the user has not
// trusted, without its settings; the run succeeds with a note that says
// how to trust it, and knotd passes nothing that trusts the folder.
func TestGemini_UntrustedFolder(t *testing.T) {
	agent, state := fakePreset(t, PresetGemini)
	agent.Env[fakeagent.EnvFail] = "untrusted"
	res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeOK || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "trustedFolders.json") }) {
		t.Errorf("Run = %s %q notes %q; want ok with a note on trusting the folder", res.Outcome, res.Reason, res.Notes)
	}
	for _, c := range mustCalls(t, state) {
		if strings.Contains(strings.Join(c.Args, " "), "trust") {
			t.Errorf("knotd asked the CLI to trust the folder: %q", c.Args)
		}
	}
}

// TestGemini_UntrustedFolderIsNotTheCause: a run in an untrusted folder
// that fails (an empty reply) gives a reason that does not quote Gemini
// CLI's line about the folder as if it were the cause (the note says it).
// Before, the reason was "empty reply: Skipping project agents due to
// untrusted folder. …".
func TestGemini_UntrustedFolderIsNotTheCause(t *testing.T) {
	agent, _ := fakePreset(t, PresetGemini)
	agent.Env[fakeagent.EnvFail] = "untrustedempty"
	res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeFailed || res.Reason != "empty reply" || !strings.Contains(res.Stderr, "untrusted folder") ||
		!slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "trustedFolders.json") }) {
		t.Errorf("Run = %s %q (stderr %q) notes %q; want failed with the reason \"empty reply\" and the note on trusting the folder",
			res.Outcome, res.Reason, res.Stderr, res.Notes)
	}
}

// TestGemini_AgentGoneMidConversation: a CLI that exits in the middle of
// the conversation fails the run at once, with its exit status and error,
// not at the timeout.
func TestGemini_AgentGoneMidConversation(t *testing.T) {
	agent, _ := fakePreset(t, PresetGemini)
	agent.Env[fakeagent.EnvFail], agent.Timeout = "crash", time.Minute
	start := time.Now()
	res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeFailed || res.ExitCode != 1 || !strings.Contains(res.Reason, "out of memory") {
		t.Errorf("Run = %s (exit %d) %q; want failed with the agent's exit status and error", res.Outcome, res.ExitCode, res.Reason)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the run took %v; want it to end when the agent exited", d)
	}
}

// TestGemini_FloodWhileThePromptIsWritten: the CLI prints megabytes
// without reading its input while knotd writes a prompt longer than a
// pipe's buffer: the output is read on (and cut at MaxStdout), the prompt
// gets through, and the reply is read, with no deadlock.
func TestGemini_FloodWhileThePromptIsWritten(t *testing.T) {
	agent, _ := fakePreset(t, PresetGemini)
	agent.Env[fakeagent.EnvFail], agent.Timeout = "flood", time.Minute
	note := "# Long\n\n" + strings.Repeat("a line of the note that goes on\n", 6000)
	res := mustRun(t, &Runner{}, runRequest(t, agent, note))
	if len(res.Prompt) < 128<<10 {
		t.Fatalf("the prompt is %d bytes; want it longer than a pipe buffer", len(res.Prompt))
	}
	if res.Outcome != OutcomeOK || res.Reply != "FAKE REPLY (user messages seen: 1)" || !res.StdoutTruncated || res.StdoutBytes < 4<<20 {
		t.Errorf("Run = %s %q reply %q, stdout %d bytes (cut %v); want ok after 4 MiB of output", res.Outcome, res.Reason, res.Reply, res.StdoutBytes, res.StdoutTruncated)
	}
}

// TestGemini_LingeringAgentStopped: a CLI that does not exit once its
// input is closed after the reply is stopped after the grace period; the
// run keeps its reply and says so.
func TestGemini_LingeringAgentStopped(t *testing.T) {
	agent, _ := fakePreset(t, PresetGemini)
	agent.Env[fakeagent.EnvFail], agent.Timeout = "linger", time.Minute
	start := time.Now()
	res := mustRun(t, &Runner{Grace: 200 * time.Millisecond}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeOK || res.Reply != "FAKE REPLY (user messages seen: 1)" || res.ExitCode != -1 ||
		!slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "did not exit within the grace period") }) {
		t.Errorf("Run = %s %q reply %q exit %d notes %q; want ok, stopped, with a note", res.Outcome, res.Reason, res.Reply, res.ExitCode, res.Notes)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the run took %v; want it stopped after the grace period", d)
	}
}

// TestGemini_HangTimesOut: a CLI that never answers is stopped at the
// timeout, like any other.
func TestGemini_HangTimesOut(t *testing.T) {
	agent, _ := fakePreset(t, PresetGemini)
	agent.Env[fakeagent.EnvFail], agent.Timeout = "hang", time.Second
	res := mustRun(t, &Runner{Grace: 100 * time.Millisecond}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeTimeout {
		t.Errorf("Run = %s %q; want timeout", res.Outcome, res.Reason)
	}
}

// TestGemini_InvalidUTF8Noted: a prompt that is not valid UTF-8 cannot go
// into a JSON string as it is; the run says so.
func TestGemini_InvalidUTF8Noted(t *testing.T) {
	agent, state := fakePreset(t, PresetGemini)
	res := mustRun(t, &Runner{}, runRequest(t, agent, "# Bytes\n\n\xff\xfe\n"))
	if res.Outcome != OutcomeOK || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "not valid UTF-8") }) {
		t.Errorf("Run = %s %q notes %q; want ok with a note", res.Outcome, res.Reason, res.Notes)
	}
	if c := mustCalls(t, state); len(c) != 1 || !strings.Contains(c[0].Stdin, "\uFFFD\uFFFD") {
		t.Errorf("calls %+v; want the prompt with U+FFFD for the invalid bytes", c)
	}
}

// talkACP holds conversation c (an ACP conversation on the SDK) with a
// stand-in for the agent that prints stdout, line by line as proc.Run hands
// them over, and returns what c parsed and every message knotd sent, in
// order (and "finish: <error>" if finish failed). A response (an id, no
// method) is handed over once knotd sent the request it answers: the
// recorded id N answers knotd's Nth request, and gets the id knotd gave
// it. A request of the agent is answered before the next line. event, if
// not nil, gets "in:N" before line N is handed over and "out:<method>" or
// "out:answer" as knotd sends.
// awaitPromptAfterCommands returns a recorded Gemini CLI output with an
// awaitSent line for session/prompt after its first
// available_commands_update: Gemini answers the prompt only once it has
// it, and the recording says only that it came before the answer. Fed
// without the wait, the turn's first updates could reach knotd before it
// sent the prompt, and be taken for the loaded session's history.
func awaitPromptAfterCommands(stdout string) string {
	var b strings.Builder
	done := false
	for line := range strings.Lines(stdout) {
		b.WriteString(line)
		if !done && strings.Contains(line, `"sessionUpdate":"available_commands_update"`) {
			if !strings.HasSuffix(line, "\n") {
				b.WriteString("\n")
			}
			b.WriteString(awaitSent + "session/prompt\n")
			done = true
		}
	}
	return b.String()
}

// awaitSent, then a method, is a line of talkACP's stdout that is not
// output: the agent waits there until knotd sent a request of that
// method (an agent answers the prompt only once it has it).
const awaitSent = "AWAIT "

func talkACP(t *testing.T, c conversation, stdout, stderr string, event func(string)) (parsed, []string) {
	t.Helper()
	var (
		mu       sync.Mutex
		sent     []string
		requests []json.RawMessage // the ids of knotd's requests, in order
		answered = map[string]bool{}
		closed   bool
		changed  = make(chan struct{}, 1)
	)
	ev := func(e string) { // under mu
		if event != nil {
			event(e)
		}
	}
	push := func(msgs [][]byte, close bool) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			sent = append(sent, string(m))
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if err := json.Unmarshal(m, &msg); err != nil {
				t.Errorf("knotd sent %q: %v", m, err)
				continue
			}
			switch {
			case msg.Method != "" && len(msg.ID) > 0:
				requests = append(requests, msg.ID)
				ev("out:" + msg.Method)
			case msg.Method != "":
				ev("out:" + msg.Method)
			default:
				answered[string(msg.ID)] = true
				ev("out:answer")
			}
		}
		closed = closed || close
		select {
		case changed <- struct{}{}:
		default:
		}
		return nil
	}
	// waitFor waits for cond (under mu) with a deadline.
	waitFor := func(what string, cond func() bool) bool {
		deadline := time.After(10 * time.Second)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return true
			}
			select {
			case <-changed:
			case <-deadline:
				t.Errorf("knotd did not %s within 10s", what)
				return false
			}
		}
	}
	c.(streamingTalk).attach(push, time.Second)
	i := 0
	for line := range strings.Lines(stdout) {
		line = strings.TrimSuffix(line, "\n")
		if method, ok := strings.CutPrefix(line, awaitSent); ok {
			// Not output: the agent waits until knotd sent method.
			waitFor("send "+method, func() bool {
				return closed || slices.ContainsFunc(sent, func(m string) bool { return strings.Contains(m, `"method":"`+method+`"`) })
			})
			continue
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(line), &m) // not JSON: handed over as it is
		id, method := m["id"], m["method"]
		if len(id) > 0 && len(method) == 0 {
			if n, err := strconv.Atoi(string(id)); err == nil && n > 0 {
				if waitFor(fmt.Sprintf("send request %d (answered by line %d)", n, i), func() bool { return len(requests) >= n || closed }) {
					mu.Lock()
					if len(requests) >= n {
						m["id"] = requests[n-1]
						b, err := json.Marshal(m)
						if err != nil {
							t.Fatal(err)
						}
						line = string(b)
					}
					mu.Unlock()
				}
			}
		}
		mu.Lock()
		ev(fmt.Sprintf("in:%d", i))
		mu.Unlock()
		c.line([]byte(line))
		if len(id) > 0 && len(method) > 0 {
			waitFor(fmt.Sprintf("answer the request of line %d", i), func() bool { return answered[string(id)] })
		}
		i++
	}
	waitFor("end the conversation", func() bool { return closed })
	p, err := c.finish([]byte(stdout), false, stderr)
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		sent = append(sent, "finish: "+err.Error())
	}
	return p, sent
}
