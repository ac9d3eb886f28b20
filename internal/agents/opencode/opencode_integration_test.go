package opencode_test

import (
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/agents/opencode/opencodetest"
)

// adapter is `opencode acp` and its stand-in, the Anthropic API's.
var adapter = realcli.ACPAdapter{
	Name: "opencode", Version: opencodetest.OpenCodeVersion, Bin: opencodetest.OpenCode, Args: []string{"acp"},
	Asks: "build", Usage: [2]int{10, 8}, Rejected: "end_turn", FSWrite: true,
	Store: func(dir string) string { return filepath.Join(dir, ".local", "share", "opencode") },
	StandIn: func(t *testing.T, dir string) ([]string, realcli.ACPAPI) {
		api := claudetest.NewAnthropic(t)
		return opencodetest.Env(api, dir, "ask"), realcli.ACPAPI{
			Prompts: api.ConversationPrompts,
			Write: func(target, content string) {
				call := agenttest.ToolCall{ID: "toolu_acp_write", Name: "write",
					Input: map[string]string{"filePath": target, "content": content}}
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
// opencode preset (see realcli.RunACPPreset).
func TestACPPreset_RealCLI(t *testing.T) {
	realcli.RunACPPreset(t, adapter, agentrun.PresetOpenCode)
}
