package agentrun

import (
	"os"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/agents/claude"
	"github.com/knotd/knotd/internal/agents/codex"
)

// TestMain lets the test binary impersonate agent CLIs: started with
// fakeagent.EnvBehaviour set, it runs that fake agent instead of the tests.
func TestMain(m *testing.M) {
	fakeagent.Main(nil)
	os.Exit(m.Run())
}

// claudeDriver is the runner's driver for the claude preset (agents/claude).
func claudeDriver() kitTotaler { return newKitDriver(claude.Driver{}).(kitTotaler) }

// codexDriver is the runner's driver for the codex preset (agents/codex).
func codexDriver() kitTotaler { return newKitDriver(codex.Driver{}).(kitTotaler) }

// geminiDriver is the ACP driver with the gemini preset (agents/gemini).
func geminiDriver() acpDriver { return newDriver(&Agent{}, PresetGemini).(acpDriver) }
