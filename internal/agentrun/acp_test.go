package agentrun

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	acpagent "github.com/knotd/knotd/internal/agents/acp"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/transcript"
)

// fakeACP returns a protocol: acp command agent run by the generic fake
// ACP agent (no preset), with mode as its EnvFail, and its state directory.
func fakeACP(t *testing.T, mode string) (Agent, string) {
	t.Helper()
	agent, state := fakeCommand(t, fakeagent.ACP)
	agent.Protocol = ProtocolACP
	agent.Timeout = time.Minute
	if mode != "" {
		agent.Env[fakeagent.EnvFail] = mode
	}
	if err := agent.Validate(); err != nil {
		t.Fatal(err)
	}
	return agent, state
}

// acpReceived returns the messages the fake ACP agent received, in order.
func acpReceived(t *testing.T, state string) []map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "acp.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("the agent received %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// acpMethods returns the methods of the requests and notifications the
// fake ACP agent received.
func acpMethods(t *testing.T, state string) []string {
	t.Helper()
	var out []string
	for _, m := range acpReceived(t, state) {
		var method string
		if json.Unmarshal(m["method"], &method) == nil && method != "" {
			out = append(out, method)
		}
	}
	return out
}

func hasNote(notes []string, part string) bool {
	return slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, part) })
}

// TestACP_NewThenResumedTurn: a generic ACP agent, with no preset, starts
// a session on turn 1 and continues it on turn 2, by session/resume where
// the agent offers it, else session/load (whose replayed history stays out
// of the transcript); each turn's updates become blocks, its usage the
// run's tokens and cost.
func TestACP_NewThenResumedTurn(t *testing.T) {
	for _, tc := range []struct{ mode, method string }{{"", "session/resume"}, {"load", "session/load"}} {
		t.Run(tc.method, func(t *testing.T) {
			agent, state := fakeACP(t, tc.mode)
			r := &Runner{}
			req := runRequest(t, agent, planV1)
			first := mustRun(t, r, req)
			if first.Outcome != OutcomeOK || first.Reply != "FAKE REPLY (user messages seen: 1)" || first.Resume == "" {
				t.Fatalf("turn 1 = %s %q reply %q resume %q; want ok with the agent's session id", first.Outcome, first.Reason, first.Reply, first.Resume)
			}
			if u := first.Usage; u == nil || u.InputTokens != 100 || u.OutputTokens != 20 || u.CostUSD != 0.25 {
				t.Errorf("turn 1 usage = %+v; want 100 in, 20 out, $0.25", u)
			}
			var types []string
			for _, b := range first.Message.Blocks {
				types = append(types, string(b.Type)+":"+b.Name)
			}
			want := []string{"thinking:", "thinking:", "tool_use:read", "tool_result:", "text:"}
			if !slices.Equal(types, want) || first.Message.Blocks[1].Text != "Plan:\n- [completed] Read the note\n- [in_progress] Answer" {
				t.Errorf("turn 1 blocks = %q (%+v); want %q with the plan", types, first.Message.Blocks, want)
			}
			second := mustRun(t, r, nextTurn(req, first.Resume, planV2))
			if second.Outcome != OutcomeOK || second.Reply != "FAKE REPLY (user messages seen: 2)" || second.Resume != first.Resume || second.Restarted != nil {
				t.Fatalf("turn 2 = %s %q reply %q resume %q restarted %+v; want the session continued", second.Outcome, second.Reason, second.Reply, second.Resume, second.Restarted)
			}
			if second.Usage == nil || second.Usage.InputTokens != 200 {
				t.Errorf("turn 2 usage = %+v; want 200 in", second.Usage)
			}
			for _, b := range second.Message.Blocks {
				if strings.Contains(b.Text, "user messages seen: 1") {
					t.Errorf("turn 2's transcript holds the replayed history: %+v", b)
				}
			}
			got := acpMethods(t, state)
			wantMethods := []string{"initialize", "session/new", "session/prompt", "initialize", tc.method, "session/prompt"}
			if !slices.Equal(got, wantMethods) {
				t.Errorf("the agent received %q; want %q", got, wantMethods)
			}
			calls := mustCalls(t, state)
			if len(calls) != 2 || calls[1].Stdin != second.Prompt || len(calls[1].Args) != 0 {
				t.Errorf("calls = %+v; want two, the second given the whole prompt as one text block and no arguments", calls)
			}
		})
	}
}

// TestACP_LostSessionStartsAfreshOnce: a session the agent does not have,
// or an agent that can continue none, makes the run start a fresh one,
// once, and say so in the prompt.
func TestACP_LostSessionStartsAfreshOnce(t *testing.T) {
	for _, tc := range []struct{ name, mode, reason string }{
		{"unknown session", "", "session/resume refused: Resource not found: session 99999999-2222-4333-8444-555555555555"},
		{"unknown session, load", "load", "session/load refused: Resource not found: session 99999999-2222-4333-8444-555555555555"},
		{"agent continues none", "fresh", "the agent offers neither session/resume nor session/load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent, state := fakeACP(t, tc.mode)
			const handle = "99999999-2222-4333-8444-555555555555"
			req := nextTurn(runRequest(t, agent, planV1), handle, planV2)
			res := mustRun(t, &Runner{}, req)
			if res.Outcome != OutcomeOK || res.Reply != "FAKE REPLY (user messages seen: 1)" || res.Resume == "" || res.Resume == handle {
				t.Fatalf("Run = %s %q reply %q resume %q; want ok in a fresh session", res.Outcome, res.Reason, res.Reply, res.Resume)
			}
			if res.Restarted == nil || res.Restarted.Handle != handle || !strings.HasPrefix(res.Restarted.Reason, tc.reason) {
				t.Errorf("Restarted = %+v; want handle %s, reason %q", res.Restarted, handle, tc.reason)
			}
			if !strings.Contains(res.Prompt, "could not be continued: "+tc.reason) {
				t.Errorf("the prompt does not say the conversation was restarted:\n%s", res.Prompt)
			}
			if n := len(mustCalls(t, state)); n != 2 {
				t.Errorf("%d runs of the agent; want 2 (the refused one, the fresh one)", n)
			}
		})
	}
}

// TestACP_Permissions: session/request_permission is answered per the
// agent's permissions: an edit is refused at read-only, allowed at edit
// and full, always once.
func TestACP_Permissions(t *testing.T) {
	for perm, want := range map[Permissions]string{"": "reject", PermReadOnly: "reject", PermEdit: "allow", PermFull: "allow"} {
		agent, _ := fakeACP(t, "permission")
		agent.Permissions = perm
		res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
		if res.Outcome != OutcomeOK || !strings.HasSuffix(res.Reply, "[permission: "+want+"]") {
			t.Errorf("permissions %q: Run = %s %q reply %q; want the answer %s", perm, res.Outcome, res.Reason, res.Reply, want)
		}
		if !hasNote(res.Notes, `"Edit out.md" (a tool call of kind edit)`) {
			t.Errorf("permissions %q: notes %q; want the request noted", perm, res.Notes)
		}
	}
}

// testFS is a FileSystem over a map, recording its calls.
type testFS struct {
	mu     sync.Mutex
	refuse error // MayEdit's answer
	files  map[string]string
	// missing: a file not in files does not exist (fs.ErrNotExist), as
	// the vault's file system says, rather than a failure
	missing bool
	calls   []string
}

func (f *testFS) ReadTextFile(_ context.Context, path string, line, limit int) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "read "+filepath.Base(path))
	s, ok := f.files[path]
	if !ok && f.missing {
		return "", fmt.Errorf("%s: %w", filepath.Base(path), fs.ErrNotExist)
	}
	if !ok {
		return "", errors.New("no such note")
	}
	lines := strings.SplitAfter(s, "\n")
	if line > 0 {
		lines = lines[min(line-1, len(lines)):]
	}
	if limit > 0 {
		lines = lines[:min(limit, len(lines))]
	}
	return strings.Join(lines, ""), nil
}

func (f *testFS) WriteTextFile(_ context.Context, path, content string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "write "+filepath.Base(path))
	f.files[path] = content
	return nil
}

// MayEdit lets every edit, unless refuse is set.
func (f *testFS) MayEdit(_ context.Context, paths []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		f.calls = append(f.calls, "may edit "+filepath.Base(p))
	}
	return f.refuse
}

// TestACP_EditPermissionAsksTheFileSystem: before knotd grants an ACP
// agent's request for permission to edit a file (which the agent then
// writes with its own tools, as OpenCode does), it asks the run's file
// system (MayEdit) about the files the tool call names; a refusal there
// is the reject option, with why in the run's notes, and the file stays.
func TestACP_EditPermissionAsksTheFileSystem(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mode    string // the fake's mode: permedit, unless said
		perm    Permissions
		refuse  string
		want    string // the agent's answer
		fsCalls []string
	}{
		{name: "granted", perm: PermEdit, want: "allow", fsCalls: []string{"may edit side.txt"}},
		// ACP makes the locations optional: an edit that names no file
		// cannot be checked, and is refused below full.
		{name: "no file named, edit", mode: "permeditnopath", perm: PermEdit, refuse: "the edit names no file", want: "reject"},
		{name: "no file named, full", mode: "permeditnopath", perm: PermFull, want: "allow"},
		{name: "the file system refuses", perm: PermFull, refuse: "refused: side.txt changed while the agent ran (the user saved it)",
			want: "reject", fsCalls: []string{"may edit side.txt"}},
		{name: "read-only: not asked", perm: PermReadOnly, want: "reject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mode := cmp.Or(tc.mode, "permedit")
			agent, _ := fakeACP(t, mode)
			gate := filepath.Join(t.TempDir(), "gate")
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			agent.Env[fakeagent.EnvGate] = gate
			agent.Permissions = tc.perm
			req := runRequest(t, agent, planV1)
			side := filepath.Join(req.Vault, "side.txt")
			if err := os.WriteFile(side, []byte("user\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			fs := &testFS{}
			if tc.refuse != "" {
				fs.refuse = errors.New(tc.refuse)
			}
			req.FS = fs
			res := mustRun(t, &Runner{}, req)
			if res.Outcome != OutcomeOK || !strings.HasSuffix(res.Reply, "[permission: "+tc.want+"]") {
				t.Fatalf("Run = %s %q reply %q; want the answer %s", res.Outcome, res.Reason, res.Reply, tc.want)
			}
			if !slices.Equal(fs.calls, tc.fsCalls) {
				t.Errorf("file system calls %q; want %q", fs.calls, tc.fsCalls)
			}
			if tc.refuse != "" && !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "(a tool call of kind edit): "+tc.refuse) }) {
				t.Errorf("notes %q; want why the edit was refused", res.Notes)
			}
			want := "user\n"
			if tc.want == "allow" {
				want += "agent line\n"
			}
			if b, err := os.ReadFile(side); err != nil || string(b) != want {
				t.Errorf("side.txt = %q, %v; want %q", b, err, want)
			}
		})
	}
}

// TestACP_FileSystem: the run's file system is offered to the agent
// (reading always, writing at edit or full only, never a terminal), its
// calls reach Request.FS or are refused with why, and each is in the
// transcript as it happens.
func TestACP_FileSystem(t *testing.T) {
	for _, tc := range []struct {
		name       string
		perm       Permissions
		noFS       bool
		caps       string
		reply      string
		fsCalls    []string
		tools      []string
		lastResult string
	}{
		{name: "read-only", perm: PermReadOnly, caps: `{"readTextFile":true}`,
			reply:   "[read: line 1\n] [write: the agent's permissions are read-only: knotd refuses writes (permissions edit or full allow them)]",
			fsCalls: []string{"read in.md"}, tools: []string{"fs/read_text_file", "fs/write_text_file"}, lastResult: "refused: the agent's permissions are read-only"},
		{name: "edit", perm: PermEdit, caps: `{"readTextFile":true,"writeTextFile":true}`,
			reply:   "[read: line 1\n] [write: ok]",
			fsCalls: []string{"read in.md", "write out.md"}, tools: []string{"fs/read_text_file", "fs/write_text_file"}, lastResult: "allowed: wrote 21 bytes"},
		{name: "no file system", perm: PermFull, noFS: true, caps: `{}`,
			reply: "[read: error: knotd offered no file system to this agent] [write: knotd offered no file system to this agent]",
			tools: []string{"fs/read_text_file", "fs/write_text_file"}, lastResult: "refused: knotd offered no file system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent, state := fakeACP(t, "fs")
			agent.Permissions = tc.perm
			req := runRequest(t, agent, planV1)
			fs := &testFS{files: map[string]string{filepath.Join(req.Vault, "in.md"): "line 1\nline 2\n"}}
			if !tc.noFS {
				req.FS = fs
			}
			var live []transcript.Block
			req.OnOutput = func(m transcript.AssistantMessage) { live = append(live, m.Blocks...) }
			res := mustRun(t, &Runner{}, req)
			if res.Outcome != OutcomeOK || !strings.HasSuffix(res.Reply, tc.reply) {
				t.Fatalf("Run = %s %q reply %q; want ok ending %q", res.Outcome, res.Reason, res.Reply, tc.reply)
			}
			if !slices.Equal(fs.calls, tc.fsCalls) {
				t.Errorf("file system calls %q; want %q", fs.calls, tc.fsCalls)
			}
			if out, ok := fs.files[filepath.Join(req.Vault, "out.md")]; ok != (len(tc.fsCalls) == 2) || ok && out != "written by the agent\n" {
				t.Errorf("out.md = %q (written %v)", out, ok)
			}
			var params struct {
				ClientCapabilities struct {
					Fs       json.RawMessage `json:"fs"`
					Terminal *bool           `json:"terminal"`
				} `json:"clientCapabilities"`
			}
			if err := json.Unmarshal(acpReceived(t, state)[0]["params"], &params); err != nil ||
				string(params.ClientCapabilities.Fs) != tc.caps || params.ClientCapabilities.Terminal != nil {
				t.Errorf("clientCapabilities = %+v (%v); want fs %s and no terminal", params.ClientCapabilities, err, tc.caps)
			}
			var tools []string
			var results []transcript.Block
			for _, b := range live {
				switch {
				case b.Type == transcript.BlockToolUse && strings.HasPrefix(b.Name, "fs/"):
					tools = append(tools, b.Name)
				case b.Type == transcript.BlockToolResult && strings.HasPrefix(b.ToolUseID, "knotd-fs-"):
					results = append(results, b)
				}
			}
			if !slices.Equal(tools, tc.tools) || len(results) != 2 || !strings.HasPrefix(results[1].Content, tc.lastResult) {
				t.Errorf("live file system blocks: %q, results %+v; want %q, the last %q", tools, results, tc.tools, tc.lastResult)
			}
			n := 0
			for _, b := range res.Message.Blocks {
				if strings.HasPrefix(b.Name, "fs/") || strings.HasPrefix(b.ToolUseID, "knotd-fs-") {
					n++
				}
			}
			if n != 4 {
				t.Errorf("Result.Message has %d file system blocks; want 4: %+v", n, res.Message.Blocks)
			}
		})
	}
}

// TestACP_ReadMissingFile: a read of a file that does not exist is
// answered with ACP's own error for a missing resource (-32002, "Resource
// not found"), which an agent tells from a failure (the file its write
// would create), not with the internal error of a failed read.
func TestACP_ReadMissingFile(t *testing.T) {
	agent, state := fakeACP(t, "fs")
	agent.Permissions = PermEdit
	req := runRequest(t, agent, planV1)
	req.FS = &testFS{files: map[string]string{}, missing: true}
	res := mustRun(t, &Runner{}, req)
	if res.Outcome != OutcomeOK || !strings.Contains(res.Reply, "[read: error: Resource not found: "+filepath.Join(req.Vault, "in.md")+"]") {
		t.Fatalf("Run = %s %q reply %q; want ok, the read refused as a missing resource", res.Outcome, res.Reason, res.Reply)
	}
	var code int
	for _, m := range acpReceived(t, state) {
		var e struct {
			Error *struct{ Code int } `json:"error"`
		}
		if raw, ok := m["error"]; ok && json.Unmarshal([]byte(`{"error":`+string(raw)+`}`), &e) == nil && e.Error != nil {
			code = e.Error.Code
		}
	}
	if code != -32002 {
		t.Fatalf("the read's error code = %d; want -32002 (ACP's resource not found)", code)
	}
}

// TestACP_OutputArrivesWhileRunning: the agent's updates reach OnOutput
// while it runs: the fake waits, after a chunk, for the test to have seen
// it.
func TestACP_OutputArrivesWhileRunning(t *testing.T) {
	agent, _ := fakeACP(t, "gate")
	gate := filepath.Join(t.TempDir(), "seen")
	agent.Env[fakeagent.EnvGate] = gate
	req := runRequest(t, agent, planV1)
	var live []transcript.Block
	req.OnOutput = func(m transcript.AssistantMessage) {
		if m.Format != acpagent.Format {
			t.Errorf("live message format %q", m.Format)
		}
		live = append(live, m.Blocks...)
		for _, b := range m.Blocks {
			if b.Type == transcript.BlockText && strings.HasPrefix(b.Text, "FAKE REPLY") {
				if err := os.WriteFile(gate, nil, 0o600); err != nil {
					t.Error(err)
				}
			}
		}
	}
	res := mustRun(t, &Runner{}, req)
	if res.Outcome != OutcomeOK || res.Reply != "FAKE REPLY (user messages seen: 1)" {
		t.Fatalf("Run = %s %q reply %q; want ok", res.Outcome, res.Reason, res.Reply)
	}
	if len(live) < 5 || len(res.Message.Blocks) < len(live) {
		t.Fatalf("live blocks %+v, result %+v", live, res.Message.Blocks)
	}
	for i, b := range live {
		if r := res.Message.Blocks[i]; r.Type != b.Type || r.Text != b.Text {
			t.Errorf("Result.Message block %d = %+v; want the live %+v", i, r, b)
		}
	}
}

// TestACP_CancelBeforeKill: at the timeout, and when the run is stopped,
// knotd sends session/cancel and gives the agent the grace period to end
// its turn, before it stops the process group: the fake only ends its
// turn on session/cancel, and its stopReason cancelled is read before the
// run ends.
func TestACP_CancelBeforeKill(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		stop    bool
		want    Outcome
	}{
		{"timeout", time.Second, false, OutcomeTimeout},
		{"stopped", time.Minute, true, OutcomeCanceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agent, state := fakeACP(t, "cancel")
			agent.Timeout = tc.timeout
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan Result, 1)
			go func() {
				res, err := (&Runner{Grace: 10 * time.Second}).Run(ctx, runRequest(t, agent, planV1))
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			if tc.stop {
				testutil.WaitFor(t, 30*time.Second, "the prompt to reach the agent", func() bool {
					b, _ := os.ReadFile(filepath.Join(state, "acp.jsonl"))
					return strings.Contains(string(b), `"session/prompt"`)
				})
				cancel()
			}
			res := <-done
			if res.Outcome != tc.want {
				t.Errorf("Run = %s %q; want %s", res.Outcome, res.Reason, tc.want)
			}
			if got := acpMethods(t, state); !slices.Equal(got, []string{"initialize", "session/new", "session/prompt", "session/cancel"}) {
				t.Errorf("the agent received %q; want session/cancel after the prompt", got)
			}
			if !hasNote(res.Notes, "knotd sent session/cancel") {
				t.Errorf("notes %q; want one saying session/cancel was sent", res.Notes)
			}
			if !hasNote(res.Notes, "ended the turn with stopReason cancelled") {
				t.Errorf("notes %q; want the agent to have ended its turn (cancelled) before it was stopped", res.Notes)
			}
		})
	}
}

// TestACP_AgentErrors: the agent's error response, its refusal, and a
// command that does not speak ACP fail the run with what to do.
func TestACP_AgentErrors(t *testing.T) {
	for _, tc := range []struct{ mode, reason string }{
		{"error", "the agent failed the prompt: the model is overloaded (ACP error -32603)"},
		{"refusal", "the agent refused the prompt (stopReason refusal)"},
		{"notacp", "the ACP agent stopped before the prompt was sent: check that the command speaks ACP"},
		{"auth", "the agent failed the prompt: Authentication required (ACP error -32000); sign in to the agent"},
	} {
		agent, _ := fakeACP(t, tc.mode)
		res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
		if res.Outcome != OutcomeFailed || !strings.Contains(res.Reason, tc.reason) {
			t.Errorf("%s: Run = %s %q; want failed saying %q", tc.mode, res.Outcome, res.Reason, tc.reason)
		}
	}
}

// TestACP_AgentGone: an agent that exits in the middle of the
// conversation fails the run at once with its exit status and standard
// error.
func TestACP_AgentGone(t *testing.T) {
	agent, _ := fakeACP(t, "crash")
	res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeFailed || res.ExitCode != 1 || !strings.Contains(res.Reason, "the agent's store is corrupt") {
		t.Errorf("Run = %s (exit %d) %q; want failed with the agent's exit status and error", res.Outcome, res.ExitCode, res.Reason)
	}
}

// TestACP_Flood: an agent that streams updates faster than they are
// handled loses none of them and keeps its connection.
func TestACP_Flood(t *testing.T) {
	agent, _ := fakeACP(t, "flood")
	res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeOK || res.Reply != "FAKE REPLY (user messages seen: 1)" {
		t.Fatalf("Run = %s %q reply %q; want ok", res.Outcome, res.Reason, res.Reply)
	}
	if !slices.ContainsFunc(res.Message.Blocks, func(b transcript.Block) bool {
		return b.Type == transcript.BlockThinking && b.Text == strings.Repeat("token ", 20000)
	}) {
		t.Errorf("blocks %d; want the 20,000 chunks in one thinking block", len(res.Message.Blocks))
	}
}

func TestACP_Validate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent Agent
		want  string // "" valid
	}{
		{"acp command", Agent{Command: []string{"goose", "acp"}, Protocol: ProtocolACP, Permissions: PermEdit}, ""},
		{"acp with prompt settings", Agent{Command: []string{"goose", "acp"}, Protocol: ProtocolACP, Output: OutputJSON, Reply: "/r"},
			"prompt, output, reply, session and resume_command do not apply to protocol: acp"},
		{"acp with a model", Agent{Command: []string{"goose", "acp"}, Protocol: ProtocolACP, Model: "m"}, "model does not apply to protocol: acp"},
		{"acp with a template value", Agent{Command: []string{"goose", "acp", "--session={session}"}, Protocol: ProtocolACP}, "protocol: acp fills in no values"},
		{"acp with other braces", Agent{Command: []string{"goose", "acp", "{}", "{customer}"}, Protocol: ProtocolACP}, ""},
		{"unknown protocol", Agent{Command: []string{"goose"}, Protocol: "mcp"}, `protocol "mcp" is not acp`},
		{"protocol on a preset", Agent{Preset: PresetClaude, Protocol: ProtocolACP}, "protocol applies to a command"},
		{"permissions on a plain command", Agent{Command: []string{"t"}, Permissions: PermEdit}, "permissions apply to"},
	} {
		err := tc.agent.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Validate = %v; want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Validate = %v; want %q", tc.name, err, tc.want)
		}
	}
	if !(&Agent{Command: []string{"goose", "acp"}, Protocol: ProtocolACP}).KeepsConversation() {
		t.Error("an ACP command does not keep its conversation")
	}
}

// TestACPPresets_SessionOptions: the ACP presets run the generic driver
// with their own arguments, environment and session options: the
// claude-acp preset's _meta (the user's settings only) on session/new and
// session/resume and its mode "default" set before each prompt, codex-acp's
// mode "read-only", opencode's "acp" argument and OPENCODE_PERMISSION.
func TestACPPresets_SessionOptions(t *testing.T) {
	for _, tc := range []struct {
		preset, mode, meta string
		args               []string
		env                [2]string
	}{
		{preset: PresetClaudeACP, mode: "default", meta: `{"claudeCode":{"options":{"settingSources":["user"]}}}`, env: [2]string{"CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", "false"}},
		{preset: PresetCodexACP, mode: "read-only"},
		{preset: PresetOpenCode, args: []string{"acp"}, env: [2]string{"OPENCODE_PERMISSION", `{"edit":"ask","bash":"ask","webfetch":"ask"}`}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			agent, state := fakeCommand(t, fakeagent.ACP)
			agent.Preset, agent.Name = tc.preset, tc.preset
			agent.Env["OPENCODE_PERMISSION"] = `{"edit":"allow"}` // the preset's wins
			if err := agent.Validate(); err != nil {
				t.Fatal(err)
			}
			if got := agent.Program(); got != agent.Command[0] {
				t.Errorf("Program() = %q; want %q", got, agent.Command[0])
			}
			req := runRequest(t, agent, planV1)
			res1 := mustRun(t, &Runner{}, req)
			if res1.Outcome != OutcomeOK || res1.Resume == "" {
				t.Fatalf("turn 1 = %s %q resume %q; want ok with a session", res1.Outcome, res1.Reason, res1.Resume)
			}
			if want := append([]string{agent.Command[0]}, tc.args...); !slices.Equal(res1.Argv, want) {
				t.Errorf("argv = %q; want %q", res1.Argv, want)
			}
			res2 := mustRun(t, &Runner{}, nextTurn(req, res1.Resume, planV2))
			if res2.Outcome != OutcomeOK || res2.Reply != "FAKE REPLY (user messages seen: 2)" {
				t.Fatalf("turn 2 = %s %q reply %q; want the resumed session's reply", res2.Outcome, res2.Reason, res2.Reply)
			}
			var seq []string
			for _, m := range acpReceived(t, state) {
				var method string
				if json.Unmarshal(m["method"], &method) != nil || method == "" || method == "initialize" {
					continue
				}
				var params struct {
					Meta   json.RawMessage `json:"_meta"`
					ModeID string          `json:"modeId"`
				}
				if err := json.Unmarshal(m["params"], &params); err != nil {
					t.Fatal(err)
				}
				switch method {
				case "session/new", "session/resume":
					if string(params.Meta) != tc.meta {
						t.Errorf("%s _meta = %s; want %q", method, params.Meta, tc.meta)
					}
				case "session/set_mode":
					method += " " + params.ModeID
				}
				seq = append(seq, method)
			}
			want := []string{"session/new", "session/prompt", "session/resume", "session/prompt"}
			if tc.mode != "" {
				want = []string{"session/new", "session/set_mode " + tc.mode, "session/prompt", "session/resume", "session/set_mode " + tc.mode, "session/prompt"}
			}
			if !slices.Equal(seq, want) {
				t.Errorf("the agent received %q; want %q", seq, want)
			}
			// The fake records only knotd's variables: the environment
			// the runner starts the agent with.
			env := (&Runner{}).procSpec(&attempt{req: &req}, res1.Argv, true, nil).Env
			if tc.env[0] != "" && !slices.Contains(env, tc.env[0]+"="+tc.env[1]) {
				t.Errorf("the agent's environment lacks %s=%s: %q", tc.env[0], tc.env[1], env)
			}
		})
	}
}

// TestACP_ValidateAsk: permissions ask and ask_wait are accepted for the
// ACP agents (the ACP presets, protocol: acp), refused for agents that
// cannot ask, and ask_wait is bounded.
func TestACP_ValidateAsk(t *testing.T) {
	acpCmd := []string{"goose", "acp"}
	for _, tc := range []struct {
		name  string
		agent Agent
		want  string // "" valid
	}{
		{"acp command", Agent{Command: acpCmd, Protocol: ProtocolACP, Permissions: PermAsk}, ""},
		{"gemini", Agent{Preset: PresetGemini, Permissions: PermAsk, AskWait: 5 * time.Minute}, ""},
		{"claude-acp", Agent{Preset: PresetClaudeACP, Permissions: PermAsk}, ""},
		{"codex-acp", Agent{Preset: PresetCodexACP, Permissions: PermAsk, AskWait: MaxAskWait}, ""},
		{"opencode", Agent{Preset: PresetOpenCode, Permissions: PermAsk, AskWait: time.Second}, ""},
		{"codex", Agent{Preset: PresetCodex, Permissions: PermAsk}, "permissions: ask needs an agent that can ask for permission: the claude preset or an ACP agent (for Codex: preset codex-acp)"},
		{"llm", Agent{Preset: PresetLLM, Permissions: PermAsk}, "permissions: ask needs an agent that can ask"},
		{"ollama", Agent{Preset: PresetOllama, Model: "m", Permissions: PermAsk}, "permissions: ask needs an agent that can ask"},
		{"digest", Agent{Preset: PresetDigest, Permissions: PermAsk}, "permissions: ask needs an agent that can ask"},
		{"plain command", Agent{Command: []string{"t"}, Permissions: PermAsk}, "permissions: ask needs an agent that can ask"},
		{"unknown level", Agent{Command: acpCmd, Protocol: ProtocolACP, Permissions: "sometimes"}, `permissions "sometimes" is not one of read-only, edit, full, ask`},
		{"ask_wait over the limit", Agent{Preset: PresetGemini, Permissions: PermAsk, AskWait: MaxAskWait + time.Second}, "ask_wait 30m1s is over the 30m0s limit"},
		{"ask_wait negative", Agent{Preset: PresetGemini, Permissions: PermAsk, AskWait: -time.Minute}, "ask_wait -1m0s is negative"},
		{"ask_wait without a unit", Agent{Preset: PresetGemini, Permissions: PermAsk, AskWait: 120}, "ask_wait 120ns is under a second"},
		{"ask_wait on codex", Agent{Preset: PresetCodex, AskWait: time.Minute}, "ask_wait applies to ACP agents"},
	} {
		err := tc.agent.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Validate = %v; want valid", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Validate = %v; want %q", tc.name, err, tc.want)
		}
	}
}
