package realcli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// RunACPAdapter drives the ACP adapters of Claude Code and Codex
// (claudeacptest.ClaudeACP, codexacptest.CodexACP) and OpenCode's ACP mode
// (opencodetest.OpenCode, `opencode acp`) with a minimal JSON-RPC client of
// its own (ACPConn), against the loopback stand-ins of the Anthropic and
// OpenAI APIs, in each agent's TestACPAdapter_RealCLI: it pins what the
// adapters do, which the ACP driver and its presets are built on, and with
// KNOT_RECORD_ACP_ADAPTERS=1 it records it into
// agents/<preset>/testdata/recorded/ (see the README there; the recordings
// were made when these tests were TestACPAdapters_RealCLI in
// internal/agentrun).
//
// What they found, claude-agent-acp 0.101.0 and codex-acp 2.6.0 on node 20
// (the Claude adapter declares node >= 22 but runs on 20), 2026-11-28:
//
//   - initialize: both say loadSession true and sessionCapabilities with
//     resume (and list, close, delete, fork, additionalDirectories);
//     promptCapabilities image and embeddedContext; mcpCapabilities http
//     (Claude also sse). Claude offers no authMethods; Codex offers
//     "api-key" and "chat-gpt". Then each sends the notification
//     _auth/status_update: with the stand-ins' environment Claude says
//     kind "api_key" (ANTHROPIC_API_KEY) and Codex kind "gateway" (the
//     config's model provider); neither needs authenticate.
//   - Reaching the model: the Claude adapter spawns the Claude Code binary
//     of @anthropic-ai/claude-agent-sdk (2.1.318; CLAUDE_CODE_EXECUTABLE
//     names another) with its own environment, so ANTHROPIC_BASE_URL and
//     ANTHROPIC_API_KEY (Server.ClaudeEnv) point it at the stand-in. The
//     Codex adapter runs `codex app-server` of its @openai/codex (0.166.0;
//     CODEX_PATH names another) with its own environment, so CODEX_HOME's
//     config.toml (OpenAI.CodexEnv: model_provider "mock", base_url the
//     stand-in's /v1) and OPENAI_API_KEY point it at the stand-in.
//   - Claude Code also asks the model for a session title (a side call
//     whose user message starts "<session>"), and in its default session
//     mode "auto" adds a notice to the reply: an agent_message_chunk with
//     _meta.claudeCode.kind "informational", not the model's words.
//   - The reply is the agent_message_chunk updates after session/prompt is
//     sent: session/load replays the whole history as user_ and
//     agent_message_chunk updates before its response (Codex also a
//     "Config warning" chunk about bubblewrap, without a messageId);
//     session/resume replays nothing.
//   - Usage: the session/prompt response's "usage" is the turn's own
//     (inputTokens, outputTokens, cachedReadTokens, cachedWriteTokens,
//     totalTokens; Codex also thoughtTokens). usage_update notifications
//     carry the context window ("used", "size"); Claude's last one of a
//     turn also a cost {amount, currency "USD"}.
//   - A session it never had: Claude answers session/resume and
//     session/load with -32002 "Resource not found", data {sessionId};
//     Codex with -32603 "Internal error", data.details "no rollout found
//     for thread id <id>". With the store wiped (Claude's
//     CLAUDE_CONFIG_DIR/projects, Codex's CODEX_HOME/sessions) Claude says
//     the same, while Codex resumes and loads the session and then answers
//     session/prompt with -32603, data.details "thread not found: <id>".
//   - Permissions: in the default modes ("auto", "agent") neither asks
//     before writing a file in the working directory. After
//     session/set_mode "default" (Claude) or "read-only" (Codex) each sends
//     session/request_permission (toolCall kind "edit", options of kinds
//     allow_once, allow_always, reject_once: Claude "allow-once",
//     "allow-with-updates", "reject", with the diff in toolCall.content;
//     Codex "allow_once", "allow_for_session", "cancel", locations only).
//     Claude's reject becomes a tool error the model sees and the turn
//     ends end_turn; Codex's "cancel" ends the turn with stopReason
//     "cancelled".
//   - Neither calls fs/read_text_file or fs/write_text_file although the
//     client offers them: both write the file on disk themselves.
//
// OpenCode 1.18.33 (npm opencode-ai, a native binary; `opencode acp`), run
// against the Anthropic stand-in through OPENCODE_CONFIG_CONTENT
// (opencodetest.Env: provider anthropic with options.baseURL), differs:
// initialize says loadSession and sessionCapabilities resume (no
// additionalDirectories), one authMethod "opencode-login" that the
// stand-in's configuration does not need; it too asks the model for a
// title ("Generate a title for this conversation:"); its modes are "build"
// and "plan", and it asks before an edit when the configuration says
// permission.edit "ask" (options "once", "always", "reject"); a refused
// write ends the turn end_turn without calling the model again; an allowed
// one is written through fs/write_text_file. Usage in the prompt response
// (inputTokens, outputTokens, totalTokens) and a cost in usage_update. A
// session it never had, or whose store (XDG_DATA_HOME/opencode) is gone:
// -32603 "Internal error: OpenCode service failure", data {"service":
// "session"}, at session/resume and session/load. Each process takes some
// seconds to start.

// EnvRecordACPAdapters set to 1 makes RunACPAdapter record what the
// adapter said into its fixtures: `KNOT_RECORD_ACP_ADAPTERS=1 go test -race
// -count=1 -run TestACPAdapter_RealCLI ./internal/agents/claudeacp` (and
// codexacp, opencode).
const EnvRecordACPAdapters = "KNOT_RECORD_ACP_ADAPTERS"

// ACPMsg is one JSON-RPC message of either side.
type ACPMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	} `json:"error,omitempty"`
}

// ACPConn is a raw JSON-RPC client of one ACP agent process over stdio. It
// answers the agent's requests as a client offering the file system would:
// session/request_permission with the option Permit picks, fs/read_text_file
// and fs/write_text_file in the vault. It keeps every line both ways.
type ACPConn struct {
	t      *testing.T
	cancel context.CancelFunc
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr bytes.Buffer // read only after Wait
	vault  string
	id     int
	exited bool // the agent was waited for
	ended  bool // what was left of its process group is gone (endGroup)
	exit   int

	// permit returns the optionId to answer a permission request with, ""
	// for cancelled.
	Permit func(options []ACPOption) string

	stdout bytes.Buffer // every line the agent wrote
	sent   bytes.Buffer // every line the client wrote
	notes  []ACPMsg     // the agent's notifications
	asked  []ACPMsg     // the agent's requests
}

// ACPOption is one option of a session/request_permission.
type ACPOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// StartACP starts bin with args in vault with env, as the leader of its
// own process group (on Unix), as knotd's runner does. Close, or the
// test's cleanup if Close was not reached, kills what is left of the group
// and waits until none of it runs: the adapters start the CLIs they drive
// as children (claude-agent-acp the Claude Code CLI, codex-acp codex
// app-server), which outlive them and would otherwise go on writing into
// the vault and the agent's home while t.TempDir's cleanup removes them.
// Call it after the t.TempDir calls of those directories: the cleanups run
// last registered first.
func StartACP(t *testing.T, bin string, args []string, vault string, env []string) *ACPConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	c := &ACPConn{t: t, cancel: cancel, vault: vault}
	c.cmd = exec.CommandContext(ctx, bin, args...)
	c.cmd.Dir, c.cmd.Env, c.cmd.WaitDelay = vault, env, 10*time.Second
	setGroup(c.cmd)
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	c.lines = bufio.NewScanner(stdout)
	c.lines.Buffer(nil, 16<<20)
	t.Cleanup(func() {
		if !c.exited {
			cancel() // kills the group (setGroup)
			_ = c.cmd.Wait()
			c.exited = true
		}
		if !c.ended {
			c.ended = true
			endGroup(t, c.cmd.Process.Pid)
		}
	})
	return c
}

// send writes one message.
func (c *ACPConn) send(m map[string]any) {
	c.t.Helper()
	m["jsonrpc"] = "2.0"
	line, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	line = append(line, '\n')
	c.sent.Write(line)
	if _, err := c.stdin.Write(line); err != nil {
		c.t.Fatalf("send %s: %v", line, err)
	}
}

// call sends a request and returns its response, answering the agent's
// requests and keeping its notifications meanwhile.
func (c *ACPConn) call(method string, params any) ACPMsg {
	c.t.Helper()
	c.id++
	want := fmt.Sprint(c.id)
	c.send(map[string]any{"id": c.id, "method": method, "params": params})
	for c.lines.Scan() {
		line := c.lines.Bytes()
		c.stdout.Write(line)
		c.stdout.WriteByte('\n')
		var m ACPMsg
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatalf("%s: the agent wrote a line that is no JSON-RPC message: %q", method, line)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			c.asked = append(c.asked, m)
			c.answer(m)
		case m.Method != "":
			c.notes = append(c.notes, m)
		case string(m.ID) == want:
			return m
		}
	}
	c.t.Fatalf("%s: the agent's output ended (%v) before its response\nstderr so far is read at exit", method, c.lines.Err())
	return ACPMsg{}
}

// MustCall is call for a request that must succeed; it returns the result.
func (c *ACPConn) MustCall(method string, params any) json.RawMessage {
	c.t.Helper()
	m := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %q %s", method, m.Error.Code, m.Error.Message, m.Error.Data)
	}
	return m.Result
}

// answer answers one request of the agent.
func (c *ACPConn) answer(m ACPMsg) {
	c.t.Helper()
	reply := map[string]any{"id": m.ID}
	fail := func(code int, msg string) { reply["error"] = map[string]any{"code": code, "message": msg} }
	switch m.Method {
	case "session/request_permission":
		var p struct {
			Options []ACPOption `json:"options"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			c.t.Fatalf("session/request_permission %s: %v", m.Params, err)
		}
		if id := c.Permit(p.Options); id != "" {
			reply["result"] = map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": id}}
		} else {
			reply["result"] = map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}
		}
	case "fs/read_text_file", "fs/write_text_file":
		var p struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			c.t.Fatalf("%s %s: %v", m.Method, m.Params, err)
		}
		rel, err := filepath.Rel(c.vault, p.Path)
		if err != nil || !filepath.IsAbs(p.Path) || !filepath.IsLocal(rel) {
			fail(-32602, "outside the vault: "+p.Path)
			break
		}
		root, err := os.OpenRoot(c.vault)
		if err != nil {
			c.t.Fatal(err)
		}
		defer func() { _ = root.Close() }()
		if m.Method == "fs/read_text_file" {
			data, err := root.ReadFile(rel)
			if err != nil {
				fail(-32002, err.Error())
				break
			}
			reply["result"] = map[string]any{"content": string(data)}
		} else {
			if err := root.WriteFile(rel, []byte(p.Content), 0o644); err != nil {
				fail(-32603, err.Error())
				break
			}
			reply["result"] = map[string]any{}
		}
	default:
		fail(-32601, "method not found: "+m.Method)
	}
	c.send(reply)
}

// Close ends the agent's input and waits for it to exit, then kills what
// it left running of its process group and waits until that is gone.
func (c *ACPConn) Close() {
	c.t.Helper()
	if err := c.stdin.Close(); err != nil {
		c.t.Fatal(err)
	}
	// The rest of its output, if any.
	for c.lines.Scan() {
		c.stdout.Write(c.lines.Bytes())
		c.stdout.WriteByte('\n')
	}
	err := c.cmd.Wait()
	c.exited = true
	c.cancel()
	c.ended = true
	endGroup(c.t, c.cmd.Process.Pid)
	if ee, ok := err.(*exec.ExitError); ok {
		c.exit = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("wait: %v", err)
	}
}

// updates returns the session/update notifications of kind sessionUpdate.
func (c *ACPConn) updates(kind string) []json.RawMessage {
	var out []json.RawMessage
	for _, n := range c.notes {
		if n.Method != "session/update" {
			continue
		}
		var p struct {
			Update json.RawMessage `json:"update"`
		}
		if json.Unmarshal(n.Params, &p) != nil {
			continue
		}
		var u struct {
			Kind string `json:"sessionUpdate"`
		}
		if json.Unmarshal(p.Update, &u) == nil && u.Kind == kind {
			out = append(out, p.Update)
		}
	}
	return out
}

// replyText joins the text of the agent_message_chunk updates among the
// notifications from the index from on (those after a session/prompt was
// sent), but for the Claude adapter's notices (_meta.claudeCode.kind
// "informational"), which are not the model's.
func (c *ACPConn) replyText(from int) string {
	var b strings.Builder
	for _, u := range (&ACPConn{notes: c.notes[from:]}).updates("agent_message_chunk") {
		var chunk struct {
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Meta struct {
				ClaudeCode struct {
					Kind string `json:"kind"`
				} `json:"claudeCode"`
			} `json:"_meta"`
		}
		if json.Unmarshal(u, &chunk) == nil && chunk.Content.Type == "text" && chunk.Meta.ClaudeCode.Kind != "informational" {
			b.WriteString(chunk.Content.Text)
		}
	}
	return b.String()
}

// record writes what c exchanged into dir as name.{stdin,stdout,stderr,exit}
// when recording.
func (c *ACPConn) record(dir, name string) {
	c.t.Helper()
	if os.Getenv(EnvRecordACPAdapters) != "1" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	for ext, data := range map[string][]byte{
		"stdin": c.sent.Bytes(), "stdout": c.stdout.Bytes(), "stderr": c.stderr.Bytes(),
		"exit": fmt.Appendf(nil, "%d\n", c.exit),
	} {
		if err := os.WriteFile(filepath.Join(dir, name+"."+ext), data, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
}

// ACPAdapter is one adapter and its stand-in.
type ACPAdapter struct {
	Name, Version string
	Bin           func(testing.TB) string
	Args          []string // after bin
	// asks is the session mode in which the adapter asks before the model
	// writes a file (session/set_mode).
	Asks string
	// fsWrite: the adapter writes an allowed file through
	// fs/write_text_file.
	FSWrite bool
	// rejected is the stopReason of a turn whose write was refused.
	Rejected string
	// store is where the adapter keeps its sessions, given the directory
	// standIn was given.
	Store func(dir string) string
	// usage is the input and output tokens of a turn's session/prompt
	// response when the stand-in answers a first turn.
	Usage [2]int
	// standIn starts the adapter's API stand-in and returns the adapter's
	// environment (dir is its home) and the API.
	StandIn func(t *testing.T, dir string) ([]string, ACPAPI)
}

// ACPAPI is what the tests need of a stand-in.
type ACPAPI struct {
	// Prompts returns the user prompts of each model call so far that
	// carried a user prompt (not counting the CLIs' side calls).
	Prompts func() [][]string
	// Write makes the model write content into the file target with the
	// CLI's own tool, once, and then finish.
	Write func(target, content string)
	// Results returns the tool results the model has been sent.
	Results func() []agenttest.ToolResult
}

// ACPInit is the initialize request of a client that offers the file
// system and no terminal.
var ACPInit = map[string]any{
	"protocolVersion": 1,
	"clientCapabilities": map[string]any{
		"fs":       map[string]any{"readTextFile": true, "writeTextFile": true},
		"terminal": false,
	},
	"clientInfo": map[string]any{"name": "knotd-test", "version": "0"},
}

// RunACPAdapter drives the real ACP agent of ad with the raw client
// ACPConn against its API stand-in (see the findings above): a new session
// and its first turn, the session resumed and loaded by new processes, a
// session it never had, its session store lost, and a write it asks
// permission for, refused and allowed. With KNOT_RECORD_ACP_ADAPTERS=1 it
// records what the agent said into fixtures (the agent's
// testdata/recorded/).
func RunACPAdapter(t *testing.T, ad ACPAdapter, fixtures string) {
	t.Helper()
	const (
		prompt1 = "## Event Context\nEvent: Created\nStrand: ideas/plan.md\n\n" + PlanV1
		prompt2 = "## Event Context\nEvent: Modified\nStrand: ideas/plan.md\n\n" + PlanV2
		unknown = "99999999-2222-4333-8444-555555555555"
	)
	bin := ad.Bin(t)
	home := t.TempDir()
	env, api := ad.StandIn(t, home)
	vault := t.TempDir()
	start := func() *ACPConn {
		c := StartACP(t, bin, ad.Args, vault, env)
		c.Permit = func([]ACPOption) string { return "" }
		return c
	}
	textPrompt := func(session, text string) map[string]any {
		return map[string]any{"sessionId": session, "prompt": []any{map[string]any{"type": "text", "text": text}}}
	}
	stopReason := func(res json.RawMessage) string {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		_ = json.Unmarshal(res, &r)
		return r.StopReason
	}

	// A new session and its first turn.
	c := start()
	initRes := c.MustCall("initialize", ACPInit)
	var caps struct {
		AgentCapabilities struct {
			LoadSession         bool `json:"loadSession"`
			SessionCapabilities struct {
				Resume *struct{} `json:"resume"`
			} `json:"sessionCapabilities"`
		} `json:"agentCapabilities"`
	}
	if err := json.Unmarshal(initRes, &caps); err != nil {
		t.Fatal(err)
	}
	if !caps.AgentCapabilities.LoadSession || caps.AgentCapabilities.SessionCapabilities.Resume == nil {
		t.Errorf("initialize = %s; want loadSession and sessionCapabilities.resume", initRes)
	}
	var newRes struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(c.MustCall("session/new", map[string]any{"cwd": vault, "mcpServers": []any{}}), &newRes); err != nil || newRes.SessionID == "" {
		t.Fatalf("session/new gave no sessionId (%v)", err)
	}
	session := newRes.SessionID
	from := len(c.notes)
	res := c.MustCall("session/prompt", textPrompt(session, prompt1))
	if got := stopReason(res); got != "end_turn" {
		t.Errorf("turn 1: session/prompt = %s; want stopReason end_turn", res)
	}
	if got, want := c.replyText(from), "MOCK REPLY (user messages seen: 1)"; got != want {
		t.Errorf("turn 1: agent_message_chunk text %q; want %q", got, want)
	}
	if got := api.Prompts(); len(got) != 1 || !slices.Equal(got[0], []string{prompt1}) {
		t.Errorf("turn 1: the model saw user prompts %q; want one call with %q", got, prompt1)
	}
	var usage struct {
		Usage struct {
			InputTokens  int `json:"inputTokens"`
			OutputTokens int `json:"outputTokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(res, &usage); err != nil || [2]int{usage.Usage.InputTokens, usage.Usage.OutputTokens} != ad.Usage {
		t.Errorf("turn 1: session/prompt = %s; want usage with %d input and %d output tokens", res, ad.Usage[0], ad.Usage[1])
	}
	t.Logf("turn 1 response %s; usage updates %s", res, c.updates("usage_update"))
	c.Close()
	c.record(fixtures, "new")

	// The session resumed by a new process: the model sees turn 1.
	for _, method := range []string{"session/resume", "session/load"} {
		c = start()
		c.MustCall("initialize", ACPInit)
		before := len(api.Prompts())
		c.MustCall(method, map[string]any{"sessionId": session, "cwd": vault, "mcpServers": []any{}})
		replayed := len(c.notes)
		res = c.MustCall("session/prompt", textPrompt(session, prompt2))
		if got, want := c.replyText(replayed), fmt.Sprintf("MOCK REPLY (user messages seen: %d)", len(api.Prompts()[len(api.Prompts())-1])); got != want {
			t.Errorf("%s: agent_message_chunk text after the prompt %q; want %q", method, got, want)
		}
		if got := stopReason(res); got != "end_turn" {
			t.Errorf("%s: session/prompt = %s; want stopReason end_turn", method, res)
		}
		got := api.Prompts()[before:]
		if len(got) != 1 || len(got[0]) < 2 || got[0][0] != prompt1 || got[0][len(got[0])-1] != prompt2 {
			t.Errorf("%s: the model saw user prompts %q; want one call with turn 1's first and this turn's last", method, got)
		}
		t.Logf("%s: %d notifications before the prompt; response %s", method, replayed, res)
		c.Close()
		c.record(fixtures, strings.TrimPrefix(method, "session/"))
	}

	// A session the adapter never had.
	c = start()
	c.MustCall("initialize", ACPInit)
	for _, method := range []string{"session/load", "session/resume"} {
		m := c.call(method, map[string]any{"sessionId": unknown, "cwd": vault, "mcpServers": []any{}})
		if m.Error == nil {
			t.Errorf("%s of an unknown session = %s; want an error", method, m.Result)
		} else {
			t.Logf("%s of an unknown session: error %d %q %s", method, m.Error.Code, m.Error.Message, m.Error.Data)
		}
	}
	c.Close()
	c.record(fixtures, "unknown-session")

	// The session store lost (a wiped home): the session is refused,
	// by the Claude adapter at resume or load (as one it never had),
	// by the Codex adapter at the first prompt after a resume or load
	// that succeeded ("thread not found: <id>"); the model is not
	// called, and a new session works.
	if _, err := os.Stat(ad.Store(home)); err != nil {
		t.Fatalf("the session store: %v", err)
	}
	if err := os.RemoveAll(ad.Store(home)); err != nil {
		t.Fatal(err)
	}
	c = start()
	c.MustCall("initialize", ACPInit)
	before := len(api.Prompts())
	for _, method := range []string{"session/resume", "session/load"} {
		m := c.call(method, map[string]any{"sessionId": session, "cwd": vault, "mcpServers": []any{}})
		if m.Error == nil {
			m = c.call("session/prompt", textPrompt(session, prompt2))
			method += ", then session/prompt"
		}
		if m.Error == nil {
			t.Errorf("%s of a session whose store is gone = %.300s; want an error", method, m.Result)
		} else {
			t.Logf("%s of a session whose store is gone: error %d %q %s", method, m.Error.Code, m.Error.Message, m.Error.Data)
		}
	}
	if got := api.Prompts()[before:]; len(got) != 0 {
		t.Errorf("with the session store lost, the model was called with %q; want no call", got)
	}
	if err := json.Unmarshal(c.MustCall("session/new", map[string]any{"cwd": vault, "mcpServers": []any{}}), &newRes); err != nil {
		t.Fatal(err)
	}
	from = len(c.notes)
	res = c.MustCall("session/prompt", textPrompt(newRes.SessionID, prompt2))
	if got, want := c.replyText(from), "MOCK REPLY (user messages seen: 1)"; got != want || stopReason(res) != "end_turn" {
		t.Errorf("after the store was lost: a new session's reply %q, response %s; want %q, end_turn", got, res, want)
	}
	c.Close()
	c.record(fixtures, "lost-store")

	// The model writes a file; the adapter asks for permission.
	for _, allow := range []bool{false, true} {
		name := map[bool]string{false: "write-rejected", true: "write-allowed"}[allow]
		target := filepath.Join(vault, name+".md")
		const content = "written by the model\n"
		api.Write(target, content)
		seen := len(api.Results())
		c = start()
		var offered [][]ACPOption
		c.Permit = func(opts []ACPOption) string {
			offered = append(offered, opts)
			want := map[bool]string{false: "reject_once", true: "allow_once"}[allow]
			for _, o := range opts {
				if o.Kind == want {
					return o.OptionID
				}
			}
			t.Errorf("%s: no %s option in %+v", name, want, opts)
			return ""
		}
		c.MustCall("initialize", ACPInit)
		if err := json.Unmarshal(c.MustCall("session/new", map[string]any{"cwd": vault, "mcpServers": []any{}}), &newRes); err != nil {
			t.Fatal(err)
		}
		c.MustCall("session/set_mode", map[string]any{"sessionId": newRes.SessionID, "modeId": ad.Asks})
		res = c.MustCall("session/prompt", textPrompt(newRes.SessionID, "Write the file."))
		if want := map[bool]string{false: ad.Rejected, true: "end_turn"}[allow]; stopReason(res) != want {
			t.Errorf("%s: session/prompt = %s; want stopReason %s", name, res, want)
		}
		data, err := os.ReadFile(target)
		written := err == nil && string(data) == content
		if written != allow {
			t.Errorf("%s: file written %v (%q, %v); want %v", name, written, data, err, allow)
		}
		var methods []string
		for _, m := range c.asked {
			methods = append(methods, m.Method)
		}
		t.Logf("%s: stop %s; the agent asked %q; options %+v; tool results %+v", name, stopReason(res), methods, offered, api.Results()[seen:])
		// Only OpenCode writes through fs/write_text_file; the others
		// write the file themselves, though the client offers it.
		want := []string{"session/request_permission"}
		if allow && ad.FSWrite {
			want = append(want, "fs/write_text_file")
		}
		if !slices.Equal(methods, want) {
			t.Errorf("%s: the agent asked %q; want %q", name, methods, want)
		}
		c.Close()
		c.record(fixtures, name)
	}
}
