package codex_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
	"github.com/knotd/knotd/internal/agents/codex/codextest"
)

// These tests prove each permission level with the real Codex CLI: the
// stand-in has the model ask the CLI to write a file, on a new turn and on
// the resumed one, and the test checks whether the file appeared and what
// the CLI sent back to the model (see realcli.RunPermCase).

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
		patch := "*** Begin Patch\n*** Add File: " + target + "\n+" + strings.TrimSuffix(realcli.PermContent, "\n") + "\n*** End Patch\n"
		return fmt.Sprintf("text(JSON.stringify(await tools.apply_patch(%q)));", patch)
	}, []string{"patch rejected"}},
	{"exec_command", func(target string) string {
		cmd := fmt.Sprintf("printf '%%s\\n' %q > %q", strings.TrimSuffix(realcli.PermContent, "\n"), target)
		return fmt.Sprintf("text(JSON.stringify(await tools.exec_command({cmd: %q})));", cmd)
	}, []string{"Read-only file system"}},
}

func TestCodex_RealCLIPermissions(t *testing.T) {
	for _, tool := range codexTools {
		for _, c := range realcli.PermCases {
			t.Run(tool.name+"/"+c.Name, func(t *testing.T) {
				rc := newRealCodex(t)
				realcli.RunPermCase(t, c, &rc.CLI, codexNextTurn,
					func(n int, target string) string {
						call := agenttest.ToolCall{ID: fmt.Sprintf("call_turn%d", n), Name: "exec", Namespace: "functions",
							Input: tool.js(target)}
						rc.api.SetAnswer(agenttest.CallTool[codextest.ResponsesRequest](call, realcli.Finished))
						return call.ID
					},
					func(n int, turn realcli.PermTurn, target string, res agentrun.Result, result *agenttest.ToolResult) {
						realcli.CheckWrite(t, n, target, turn.Written, res, result, tool.refusal)
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
	rc.api.SetAnswer(agenttest.CallTool[codextest.ResponsesRequest](call, realcli.Finished))
	res, calls := rc.Run(t, rc.FirstTurn(vault))
	realcli.CheckWrite(t, 1, target, false, res, realcli.ResultOf(calls, call.ID), codexTools[1].refusal)
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
