package realcli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// PermContent is what the permission tests have the agent write.
const PermContent = "written by the agent\n"

// PermTurn is one turn of a permissions test: the level it runs with, and
// whether the write it asks for must happen.
type PermTurn struct {
	Perm    agentrun.Permissions
	Written bool
}

// PermCase is a conversation of two turns, the second resuming the first,
// each asking for one write, in the vault or outside it.
type PermCase struct {
	Name    string
	Outside bool // the file is outside the vault
	Env     map[string]string
	Turns   [2]PermTurn
}

// PermCases are the cases both CLIs pass: every level on a new and a
// resumed turn, and a level changed between them (the resumed turn runs
// with the level configured now, not the one the conversation started
// with).
var PermCases = []PermCase{
	{Name: "read-only", Turns: [2]PermTurn{{agentrun.PermReadOnly, false}, {agentrun.PermReadOnly, false}}},
	{Name: "default is read-only", Turns: [2]PermTurn{{"", false}, {"", false}}},
	{Name: "edit", Turns: [2]PermTurn{{agentrun.PermEdit, true}, {agentrun.PermEdit, true}}},
	{Name: "edit outside the vault", Outside: true, Turns: [2]PermTurn{{agentrun.PermEdit, false}, {agentrun.PermEdit, false}}},
	{Name: "edit then read-only", Turns: [2]PermTurn{{agentrun.PermEdit, true}, {agentrun.PermReadOnly, false}}},
	{Name: "read-only then edit", Turns: [2]PermTurn{{agentrun.PermReadOnly, false}, {agentrun.PermEdit, true}}},
	// Claude Code refuses full as root unless IS_SANDBOX=1 (see
	// TestClaude_RealCLIFullAsRoot); Codex ignores the variable.
	{Name: "full, outside the vault", Outside: true, Env: map[string]string{"IS_SANDBOX": "1"},
		Turns: [2]PermTurn{{agentrun.PermFull, true}, {agentrun.PermFull, true}}},
}

// permTarget returns the file turn n of c writes: in the vault, or in a
// directory next to it.
func permTarget(t *testing.T, c PermCase, vault string, n int) string {
	t.Helper()
	dir := vault
	if c.Outside {
		dir = filepath.Join(filepath.Dir(vault), "outside")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, fmt.Sprintf("made-%d.md", n))
}

// Finished is the stand-in's final text once the CLI sent the tool's result.
func Finished(agenttest.ToolResult) string { return "FINISHED" }

// ResultOf returns the result the CLI sent for the tool call id in the
// model calls of a run, nil if none.
func ResultOf[R interface{ ToolResults() []agenttest.ToolResult }](calls []R, id string) *agenttest.ToolResult {
	for _, c := range calls {
		for _, r := range c.ToolResults() {
			if r.ID == id {
				return &r
			}
		}
	}
	return nil
}

// CheckWrite checks whether a turn's write happened, and that a refused
// one was reported to the model as refused.
func CheckWrite(t *testing.T, turn int, target string, want bool, res agentrun.Result, result *agenttest.ToolResult, refusal []string) {
	t.Helper()
	data, err := os.ReadFile(target)
	switch {
	case want && (err != nil || string(data) != PermContent):
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

// RunPermCase runs c's two turns with cli in a new vault, the second
// resuming the first (next makes its request from the first's and its
// result). Before each turn n, ask has the stand-in call a tool that writes
// target, and returns the call's id; after it, check checks the turn, given
// the result the CLI sent for the call.
func RunPermCase[R interface{ ToolResults() []agenttest.ToolResult }](t *testing.T, c PermCase, cli *CLI[R],
	next func(agentrun.Request, agentrun.Result) agentrun.Request,
	ask func(n int, target string) string,
	check func(n int, turn PermTurn, target string, res agentrun.Result, result *agenttest.ToolResult),
) {
	t.Helper()
	cli.Agent.Env = c.Env
	vault := t.TempDir()
	req := cli.FirstTurn(vault)
	var res agentrun.Result
	for i, turn := range c.Turns {
		n := i + 1
		target := permTarget(t, c, vault, n)
		id := ask(n, target)
		if n == 2 {
			req = next(req, res)
		}
		req.Agent = cli.Agent
		req.Agent.Permissions = turn.Perm
		var calls []R
		res, calls = cli.Run(t, req)
		if res.Reply != "FINISHED" {
			t.Errorf("turn %d reply %q; want the stand-in's final text", n, res.Reply)
		}
		check(n, turn, target, res, ResultOf(calls, id))
	}
}
