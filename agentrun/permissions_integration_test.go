package agentrun_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/agentrun/agenttest"
	"github.com/knotd/knotd/agentrun/agenttest/realcli"
)

// These tests prove each permission level with the real CLIs: the
// stand-in has the model ask the CLI to write a file, on a new turn and on
// the resumed one, and the test checks whether the file appeared and what
// the CLI sent back to the model.

const permContent = "written by the agent\n"

// permTurn is one turn of a permissions test: the level it runs with, and
// whether the write it asks for must happen.
type permTurn struct {
	perm    agentrun.Permissions
	written bool
}

// permCase is a conversation of two turns, the second resuming the first,
// each asking for one write, in the vault or outside it.
type permCase struct {
	name    string
	outside bool // the file is outside the vault
	env     map[string]string
	turns   [2]permTurn
}

// permCases are the cases both CLIs pass: every level on a new and a
// resumed turn, and a level changed between them (the resumed turn runs
// with the level configured now, not the one the conversation started
// with).
var permCases = []permCase{
	{name: "read-only", turns: [2]permTurn{{agentrun.PermReadOnly, false}, {agentrun.PermReadOnly, false}}},
	{name: "default is read-only", turns: [2]permTurn{{"", false}, {"", false}}},
	{name: "edit", turns: [2]permTurn{{agentrun.PermEdit, true}, {agentrun.PermEdit, true}}},
	{name: "edit outside the vault", outside: true, turns: [2]permTurn{{agentrun.PermEdit, false}, {agentrun.PermEdit, false}}},
	{name: "edit then read-only", turns: [2]permTurn{{agentrun.PermEdit, true}, {agentrun.PermReadOnly, false}}},
	{name: "read-only then edit", turns: [2]permTurn{{agentrun.PermReadOnly, false}, {agentrun.PermEdit, true}}},
	// Claude Code refuses full as root unless IS_SANDBOX=1 (see
	// TestClaude_RealCLIFullAsRoot); Codex ignores the variable.
	{name: "full, outside the vault", outside: true, env: map[string]string{"IS_SANDBOX": "1"},
		turns: [2]permTurn{{agentrun.PermFull, true}, {agentrun.PermFull, true}}},
}

// permTarget returns the file turn n of c writes: in the vault, or in a
// directory next to it.
func permTarget(t *testing.T, c permCase, vault string, n int) string {
	t.Helper()
	dir := vault
	if c.outside {
		dir = filepath.Join(filepath.Dir(vault), "outside")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, fmt.Sprintf("made-%d.md", n))
}

// finished is the stand-in's final text once the CLI sent the tool's result.
func finished(agenttest.ToolResult) string { return "FINISHED" }

// resultOf returns the result the CLI sent for the tool call id in the
// model calls of a run, nil if none.
func resultOf[R interface{ ToolResults() []agenttest.ToolResult }](calls []R, id string) *agenttest.ToolResult {
	for _, c := range calls {
		for _, r := range c.ToolResults() {
			if r.ID == id {
				return &r
			}
		}
	}
	return nil
}

// checkWrite checks whether a turn's write happened, and that a refused
// one was reported to the model as refused.
func checkWrite(t *testing.T, turn int, target string, want bool, res agentrun.Result, result *agenttest.ToolResult, refusal []string) {
	t.Helper()
	data, err := os.ReadFile(target)
	switch {
	case want && (err != nil || string(data) != permContent):
		t.Errorf("turn %d: %s = %q, %v; want it written", turn, target, data, err)
	case !want && err == nil:
		t.Errorf("turn %d: %s was written; want the write refused", turn, target)
	}
	if result == nil {
		t.Fatalf("turn %d: the CLI sent no result for the tool call; reply %q", turn, res.Reply)
	}
	refused := false
	for _, r := range refusal {
		refused = refused || strings.Contains(result.Output, r)
	}
	if refused == want {
		t.Errorf("turn %d: the tool result %q (is_error %t) says refused %t; want %t",
			turn, result.Output, result.IsError, refused, !want)
	}
}

// runPermCase runs c's two turns with cli in a new vault, the second
// resuming the first (next makes its request from the first's and its
// result). Before each turn n, ask has the stand-in call a tool that writes
// target, and returns the call's id; after it, check checks the turn, given
// the result the CLI sent for the call.
func runPermCase[R interface{ ToolResults() []agenttest.ToolResult }](t *testing.T, c permCase, cli *realcli.CLI[R],
	next func(agentrun.Request, agentrun.Result) agentrun.Request,
	ask func(n int, target string) string,
	check func(n int, turn permTurn, target string, res agentrun.Result, result *agenttest.ToolResult),
) {
	t.Helper()
	cli.Agent.Env = c.env
	vault := t.TempDir()
	req := cli.FirstTurn(vault)
	var res agentrun.Result
	for i, turn := range c.turns {
		n := i + 1
		target := permTarget(t, c, vault, n)
		id := ask(n, target)
		if n == 2 {
			req = next(req, res)
		}
		req.Agent = cli.Agent
		req.Agent.Permissions = turn.perm
		var calls []R
		res, calls = cli.Run(t, req)
		if res.Reply != "FINISHED" {
			t.Errorf("turn %d reply %q; want the stand-in's final text", n, res.Reply)
		}
		check(n, turn, target, res, resultOf(calls, id))
	}
}

func TestClaude_RealCLIPermissions(t *testing.T) {
	for _, c := range permCases {
		t.Run(c.name, func(t *testing.T) {
			rc := newRealClaude(t)
			runPermCase(t, c, &rc.CLI,
				func(req agentrun.Request, res agentrun.Result) agentrun.Request {
					return realcli.NextTurn(req, res.Resume)
				},
				func(n int, target string) string {
					write := agenttest.ToolCall{ID: fmt.Sprintf("toolu_turn%d", n), Name: "Write",
						Input: map[string]string{"file_path": target, "content": permContent}}
					rc.api.SetAnswer(agenttest.CallTool[agenttest.Request](write, finished))
					return write.ID
				},
				func(n int, turn permTurn, target string, res agentrun.Result, result *agenttest.ToolResult) {
					// Claude Code marks a refused tool use is_error and
					// says it was denied: "Permission to use Write has been
					// denied because Claude Code is running in don't ask
					// mode", or, with --permission-prompts none,
					// "Permission for this tool use was denied".
					checkWrite(t, n, target, turn.written, res, result, []string{"denied"})
					if result != nil && result.IsError == turn.written {
						t.Errorf("turn %d: tool result is_error %t; want %t", n, result.IsError, !turn.written)
					}
				})
		})
	}
}

// TestClaude_RealCLIFullAsRoot: Claude Code 2.1.330 refuses to bypass
// permissions as root without IS_SANDBOX=1, and the run's reason says what
// to do about it.
func TestClaude_RealCLIFullAsRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("runs only as root: Claude Code refuses bypassPermissions to root alone")
	}
	rc := newRealClaude(t)
	req := rc.FirstTurn(t.TempDir())
	req.Agent.Permissions = agentrun.PermFull
	res, err := rc.Runner.Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != agentrun.OutcomeFailed {
		t.Fatalf("outcome %s %q; want failed", res.Outcome, res.Reason)
	}
	for _, want := range []string{"cannot be used with root/sudo privileges", "IS_SANDBOX", "permissions: edit"} {
		if !strings.Contains(res.Reason, want) {
			t.Errorf("Reason = %q; want it to mention %q", res.Reason, want)
		}
	}
	if n := len(rc.api.MessageRequests()); n != 0 {
		t.Errorf("the refused run made %d model calls; want none", n)
	}
}

// codexTools are the two ways Codex CLI 0.169.0's model writes a file, both
// through its code-mode tool "exec" (namespace "functions"), which runs
// JavaScript that calls nested tools: apply_patch (Codex checks the patch
// against the sandbox policy itself) and exec_command (a shell command,
// which the sandbox confines).
var codexTools = []struct {
	name string
	js   func(target string) string
	// refusal are the texts one of which the result of a refused write has.
	refusal []string
}{
	{"apply_patch", func(target string) string {
		patch := "*** Begin Patch\n*** Add File: " + target + "\n+" + strings.TrimSuffix(permContent, "\n") + "\n*** End Patch\n"
		return fmt.Sprintf("text(JSON.stringify(await tools.apply_patch(%q)));", patch)
	}, []string{"patch rejected"}},
	{"exec_command", func(target string) string {
		cmd := fmt.Sprintf("printf '%%s\\n' %q > %q", strings.TrimSuffix(permContent, "\n"), target)
		return fmt.Sprintf("text(JSON.stringify(await tools.exec_command({cmd: %q})));", cmd)
	}, []string{"Read-only file system"}},
}

func TestCodex_RealCLIPermissions(t *testing.T) {
	for _, tool := range codexTools {
		for _, c := range permCases {
			t.Run(tool.name+"/"+c.name, func(t *testing.T) {
				rc := newRealCodex(t)
				runPermCase(t, c, &rc.CLI, codexNextTurn,
					func(n int, target string) string {
						call := agenttest.ToolCall{ID: fmt.Sprintf("call_turn%d", n), Name: "exec", Namespace: "functions",
							Input: tool.js(target)}
						rc.api.SetAnswer(agenttest.CallTool[agenttest.ResponsesRequest](call, finished))
						return call.ID
					},
					func(n int, turn permTurn, target string, res agentrun.Result, result *agenttest.ToolResult) {
						checkWrite(t, n, target, turn.written, res, result, tool.refusal)
					})
			})
		}
	}
}

// TestCodex_RealCLIResumedTurnSandboxAndInstructions pins what Codex CLI
// 0.169.0 applies on a resumed turn: the sandbox of exec's -s, given before
// "resume", is the turn's own (codex tells the model the new sandbox_mode
// in a new developer message), while the developer instructions are the
// thread's: those it started with reach the model again, and a different
// -c developer_instructions is ignored.
func TestCodex_RealCLIResumedTurnSandboxAndInstructions(t *testing.T) {
	rc := newRealCodex(t)
	req := rc.FirstTurn(t.TempDir())
	req.Agent.Permissions, req.Agent.Instructions = agentrun.PermEdit, "FIRST INSTRUCTIONS"
	res, _ := rc.Run(t, req)

	req = codexNextTurn(req, res)
	req.Agent.Permissions, req.Agent.Instructions = agentrun.PermReadOnly, "CHANGED INSTRUCTIONS"
	_, calls := rc.Run(t, req)
	call := realcli.MustOneCall(t, 2, calls)
	var modes []string
	instructions := map[string]int{}
	for _, m := range call.Input {
		if m.Role != "developer" {
			continue
		}
		for _, part := range m.Content {
			if _, rest, ok := strings.Cut(part.Text, "`sandbox_mode` is `"); ok {
				mode, _, _ := strings.Cut(rest, "`")
				modes = append(modes, mode)
			}
			if strings.Contains(part.Text, "INSTRUCTIONS") {
				instructions[part.Text]++
			}
		}
	}
	if len(modes) == 0 || modes[len(modes)-1] != "read-only" {
		t.Errorf("sandbox modes told to the model on the resumed turn: %q; want read-only last", modes)
	}
	if want := map[string]int{"FIRST INSTRUCTIONS": 1}; fmt.Sprint(instructions) != fmt.Sprint(want) {
		t.Errorf("instructions the model saw on the resumed turn: %v; want %v (the thread's own)", instructions, want)
	}
}

// TestClaude_RealCLIResumedTurnInstructions pins what Claude Code 2.1.330
// sends on a resumed turn whose instructions changed: the system prompt it
// recorded on the conversation's first request (--system-prompt-snapshot
// on, its default), with the first turn's instructions; the permission
// mode, by contrast, is the launch's (TestClaude_RealCLIPermissions).
func TestClaude_RealCLIResumedTurnInstructions(t *testing.T) {
	rc := newRealClaude(t)
	req := rc.FirstTurn(t.TempDir())
	req.Agent.Instructions = "FIRST INSTRUCTIONS"
	res, _ := rc.Run(t, req)

	req = realcli.NextTurn(req, res.Resume)
	req.Agent.Instructions = "CHANGED INSTRUCTIONS"
	_, calls := rc.Run(t, req)
	call := realcli.MustOneCall(t, 2, calls)
	if !strings.Contains(call.System, "FIRST INSTRUCTIONS") || strings.Contains(call.System, "CHANGED INSTRUCTIONS") {
		t.Errorf("the resumed turn's system prompt has the first instructions %t, the changed ones %t; want the first only",
			strings.Contains(call.System, "FIRST INSTRUCTIONS"), strings.Contains(call.System, "CHANGED INSTRUCTIONS"))
	}
}

// TestClaude_RealCLIIgnoresVaultSettings: a .claude/ settings folder in
// the vault (synced from another device, dropped by someone who can write
// to the vault) that allows Write does not let a read-only agent write:
// knotd has Claude Code read the user's settings only.
func TestClaude_RealCLIIgnoresVaultSettings(t *testing.T) {
	rc := newRealClaude(t)
	vault := t.TempDir()
	settings := `{"permissions":{"allow":["Write","Edit","Bash"],"defaultMode":"bypassPermissions"}}` + "\n"
	for _, name := range []string{"settings.json", "settings.local.json"} {
		p := filepath.Join(vault, ".claude", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(settings), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(vault, "planted.md")
	write := agenttest.ToolCall{ID: "toolu_planted", Name: "Write",
		Input: map[string]string{"file_path": target, "content": permContent}}
	rc.api.SetAnswer(agenttest.CallTool[agenttest.Request](write, finished))
	req := rc.FirstTurn(vault)
	req.Agent = rc.Agent
	res, calls := rc.Run(t, req)
	checkWrite(t, 1, target, false, res, resultOf(calls, write.ID), []string{"denied"})
}

// TestCodex_RealCLIIgnoresVaultConfig pins that Codex CLI 0.169.0 takes
// nothing from a .codex/config.toml in the vault (a folder it was never
// told to trust): not the model, not developer instructions, not the
// sandbox. knotd relies on it, having no flag to turn project config off.
func TestCodex_RealCLIIgnoresVaultConfig(t *testing.T) {
	rc := newRealCodex(t)
	vault := t.TempDir()
	p := filepath.Join(vault, ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	planted := "model = \"planted-model\"\ndeveloper_instructions = \"PLANTED INSTRUCTIONS\"\nsandbox_mode = \"danger-full-access\"\n"
	if err := os.WriteFile(p, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(vault, "planted.md")
	call := agenttest.ToolCall{ID: "call_planted", Name: "exec", Namespace: "functions", Input: codexTools[1].js(target)}
	rc.api.SetAnswer(agenttest.CallTool[agenttest.ResponsesRequest](call, finished))
	res, calls := rc.Run(t, rc.FirstTurn(vault))
	checkWrite(t, 1, target, false, res, resultOf(calls, call.ID), codexTools[1].refusal)
	for _, c := range calls {
		all := c.Instructions
		for _, role := range []string{"developer", "user", "system"} {
			all += strings.Join(c.Texts(role), "\n")
		}
		if c.Model == "planted-model" || strings.Contains(all, "PLANTED") {
			t.Errorf("a model call took the vault's config: model %q, instructions planted %t", c.Model, strings.Contains(all, "PLANTED"))
		}
	}
	if res.Outcome != agentrun.OutcomeOK {
		t.Errorf("run = %s %q; want ok", res.Outcome, res.Reason)
	}
}
