// Package opencodetest helps tests run the real OpenCode CLI, as `opencode
// acp`, against the Anthropic stand-in of claudetest.
package opencodetest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
)

// OpenCodeVersion is the OpenCode release (npm opencode-ai) knotd's tests
// are written against: the one scripts/install-opencode installs and the
// fixtures in agents/opencode/testdata/recorded were recorded with.
const OpenCodeVersion = "1.18.33"

// The environment variables OpenCode reads.
const (
	// EnvOpenCodeBin names the opencode binary to use instead of running
	// scripts/install-opencode (scripts/test sets it after installing).
	EnvOpenCodeBin = "KNOT_OPENCODE_BIN"
	// EnvRequireOpenCode set to 1 turns "the CLI cannot be installed" from
	// a skip into a failure.
	EnvRequireOpenCode = "KNOT_REQUIRE_OPENCODE"
)

// OpenCode returns the path of the real OpenCode CLI, version
// OpenCodeVersion, for a test that runs it (see agenttest.RealCLI.Find):
// from $KNOT_OPENCODE_BIN, else scripts/install-opencode; it skips, or
// fails with KNOT_REQUIRE_OPENCODE=1, when the CLI cannot be had. Run it as
// `opencode acp` with the environment of Env and a deadline.
func OpenCode(tb testing.TB) string { return CLI.Find(tb) }

// CLI is the pinned OpenCode CLI; OpenCode finds it.
var CLI = agenttest.RealCLI{
	Name: "OpenCode CLI", Program: "opencode", Version: OpenCodeVersion,
	EnvBin: EnvOpenCodeBin, EnvRequire: EnvRequireOpenCode, Script: "scripts/install-opencode", Needs: "node >= 18",
	Says: func(out string) bool { return out == OpenCodeVersion },
}

// Env returns a complete environment for running the real OpenCode CLI
// against s, with home as its home directory (its XDG directories under
// it: OpenCode keeps its sessions in XDG_DATA_HOME/opencode). The
// configuration is OPENCODE_CONFIG_CONTENT: the model
// anthropic/claude-sonnet-4-5 through the anthropic provider with baseURL
// s.URL+"/v1" and a dummy key, and permission for edits set to permission
// ("ask", "allow" or "deny"); OpenCode fetches no model list and no update.
// The environment is hermetic: nothing is inherited but PATH (and, on
// Windows, SystemRoot and PATHEXT).
func Env(s *claudetest.Server, home, permission string) []string {
	config := fmt.Sprintf(`{"model":"anthropic/claude-sonnet-4-5","autoupdate":false,"share":"disabled",`+
		`"permission":{"edit":%q},`+
		`"provider":{"anthropic":{"options":{"baseURL":%q,"apiKey":"sk-dummy"}}}}`, permission, s.URL+"/v1")
	env := []string{
		"HOME=" + home,
		"USERPROFILE=" + home,
		"TMPDIR=" + home,
		"TMP=" + home,
		"TEMP=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_CONFIG_CONTENT=" + config,
	}
	for _, name := range []string{"PATH", "SystemRoot", "PATHEXT"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}
