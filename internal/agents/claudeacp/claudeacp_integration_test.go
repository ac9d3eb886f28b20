package claudeacp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/agents/claudeacp/claudeacptest"
)

// adapter is claude-agent-acp, the ACP adapter of Claude Code, and its
// stand-in, the Anthropic API's.
var adapter = realcli.ACPAdapter{
	Name: "claude-agent-acp", Version: claudeacptest.ClaudeACPVersion, Bin: claudeacptest.ClaudeACP, Asks: "default", Usage: [2]int{10, 8}, Rejected: "end_turn",
	Store: func(dir string) string { return filepath.Join(dir, ".claude", "projects") },
	StandIn: func(t *testing.T, dir string) ([]string, realcli.ACPAPI) {
		api := claudetest.NewAnthropic(t)
		// As the claude-acp preset runs it: no prompt suggestion, a
		// model call after each turn that would land, at its own
		// time, among the next turn's calls.
		env := append(api.ClaudeEnv(dir), "CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION=false")
		return env, realcli.ACPAPI{
			Prompts: api.ConversationPrompts,
			Write: func(target, content string) {
				call := agenttest.ToolCall{ID: "toolu_acp_write", Name: "Write",
					Input: map[string]string{"file_path": target, "content": content}}
				api.SetAnswer(agenttest.CallTool[claudetest.Request](call, realcli.Finished))
			},
			Results: api.ToolResults,
		}
	},
}

// TestACPAdapter_RealCLI pins what the real agent says over ACP (see
// realcli.RunACPAdapter); KNOT_RECORD_ACP_ADAPTERS=1 records it into
// testdata/recorded/.
func TestACPAdapter_RealCLI(t *testing.T) {
	realcli.RunACPAdapter(t, adapter, filepath.Join("testdata", "recorded"))
}

// TestACPPreset_RealCLI runs the real agent through knotd's Runner and the
// claude-acp preset (see realcli.RunACPPreset).
func TestACPPreset_RealCLI(t *testing.T) {
	realcli.RunACPPreset(t, adapter, agentrun.PresetClaudeACP)
}

// TestClaudeACP_RealCLIVaultSettings pins what the claude preset's ACP
// driver must send: claude-agent-acp 0.101.0 runs Claude Code with
// settingSources user, project and local, so a .claude/settings.json in the
// vault (a sync peer's input) is applied (here its env, which adds a header
// to the model calls); session/new's _meta.claudeCode.options.settingSources
// ["user"] keeps Claude Code to the user's own settings, as
// --setting-sources user does for the CLI.
func TestClaudeACP_RealCLIVaultSettings(t *testing.T) {
	bin := claudeacptest.ClaudeACP(t)
	for _, tc := range []struct {
		name    string
		meta    map[string]any // session/new's _meta; nil: none
		applied bool           // the vault's settings reach Claude Code
	}{
		{"default sources", nil, true},
		{"user settings only", map[string]any{"claudeCode": map[string]any{"options": map[string]any{"settingSources": []string{"user"}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := claudetest.NewAnthropic(t)
			env := api.ClaudeEnv(t.TempDir())
			vault := t.TempDir()
			if err := os.MkdirAll(filepath.Join(vault, ".claude"), 0o755); err != nil {
				t.Fatal(err)
			}
			planted := `{"env": {"ANTHROPIC_CUSTOM_HEADERS": "X-Planted: yes"}}` + "\n"
			if err := os.WriteFile(filepath.Join(vault, ".claude", "settings.json"), []byte(planted), 0o644); err != nil {
				t.Fatal(err)
			}
			c := realcli.StartACP(t, bin, nil, vault, env)
			c.Permit = func([]realcli.ACPOption) string { return "" }
			c.MustCall("initialize", realcli.ACPInit)
			params := map[string]any{"cwd": vault, "mcpServers": []any{}}
			if tc.meta != nil {
				params["_meta"] = tc.meta
			}
			var s struct {
				SessionID string `json:"sessionId"`
			}
			if err := json.Unmarshal(c.MustCall("session/new", params), &s); err != nil {
				t.Fatal(err)
			}
			c.MustCall("session/prompt", map[string]any{"sessionId": s.SessionID,
				"prompt": []any{map[string]any{"type": "text", "text": "Hello."}}})
			c.Close()
			calls := api.MessageRequests()
			if len(calls) == 0 {
				t.Fatal("the model was not called")
			}
			for _, r := range calls {
				if got := r.Header.Get("X-Planted") == "yes"; got != tc.applied {
					t.Errorf("a model call carried the vault settings' header: %v; want %v", got, tc.applied)
				}
			}
		})
	}
}

// TestClaudeACPPreset_RealCLIVaultSettings: the claude-acp preset keeps the
// vault's .claude/settings.json (a sync peer's input) from Claude Code, on
// a new turn and on a resumed one: a header it plants never reaches the
// model.
func TestClaudeACPPreset_RealCLIVaultSettings(t *testing.T) {
	bin := claudeacptest.ClaudeACP(t)
	api := claudetest.NewAnthropic(t)
	rc := realcli.New(agentrun.PresetClaudeACP, bin, api.ClaudeEnv(t.TempDir()), api.MessageRequests)
	vault := t.TempDir()
	if err := os.MkdirAll(filepath.Join(vault, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	planted := `{"env": {"ANTHROPIC_CUSTOM_HEADERS": "X-Planted: yes"}}` + "\n"
	if err := os.WriteFile(filepath.Join(vault, ".claude", "settings.json"), []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	req1 := rc.FirstTurn(vault)
	res1, calls1 := rc.Run(t, req1)
	_, calls2 := rc.Run(t, realcli.NextTurn(req1, res1.Resume))
	calls := append(calls1, calls2...)
	if len(calls1) == 0 || len(calls2) == 0 {
		t.Fatalf("model calls: %d on turn 1, %d on turn 2; want some on each", len(calls1), len(calls2))
	}
	for _, r := range calls {
		if r.Header.Get("X-Planted") == "yes" {
			t.Errorf("a model call carried the header of the vault's .claude/settings.json")
		}
	}
}
