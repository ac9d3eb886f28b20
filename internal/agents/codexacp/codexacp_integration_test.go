package codexacp_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agentrun/agenttest/realcli"
	"github.com/knotd/knotd/internal/agents/codex/codextest"
	"github.com/knotd/knotd/internal/agents/codexacp/codexacptest"
)

// adapter is codex-acp, the ACP adapter of Codex, and its stand-in, the
// OpenAI Responses API's.
var adapter = realcli.ACPAdapter{
	Name: "codex-acp", Version: codexacptest.CodexACPVersion, Bin: codexacptest.CodexACP, Asks: "read-only", Usage: [2]int{100, 9}, Rejected: "cancelled",
	Store: func(dir string) string { return filepath.Join(codextest.CodexHome(dir), "sessions") },
	StandIn: func(t *testing.T, dir string) ([]string, realcli.ACPAPI) {
		api := codextest.NewOpenAI(t)
		return api.CodexEnv(t, dir), realcli.ACPAPI{
			Prompts: func() [][]string {
				var out [][]string
				for _, r := range api.ResponseRequests() {
					if p := r.UserPrompts(); len(p) > 0 {
						out = append(out, p)
					}
				}
				return out
			},
			Write: func(target, content string) {
				patch := "*** Begin Patch\n*** Add File: " + target + "\n+" + strings.TrimSuffix(content, "\n") + "\n*** End Patch\n"
				call := agenttest.ToolCall{ID: "call_acp_write", Name: "apply_patch", Input: patch}
				api.SetAnswer(agenttest.CallTool[codextest.ResponsesRequest](call, realcli.Finished))
			},
			Results: func() []agenttest.ToolResult {
				var out []agenttest.ToolResult
				for _, r := range api.ResponseRequests() {
					out = append(out, r.ToolResults()...)
				}
				return out
			},
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
// codex-acp preset (see realcli.RunACPPreset).
func TestACPPreset_RealCLI(t *testing.T) {
	realcli.RunACPPreset(t, adapter, agentrun.PresetCodexACP)
}
