package claudetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// ClaudeVersion is the Claude Code release knotd's tests are written
// against: the one scripts/install-claude installs and the fixtures in
// agents/claude/testdata/recorded were recorded with.
const ClaudeVersion = "2.1.330"

// The environment variables ClaudeCLI reads.
const (
	// EnvClaudeBin names the claude binary to use instead of running
	// scripts/install-claude (scripts/test sets it after installing).
	EnvClaudeBin = "KNOT_CLAUDE_BIN"
	// EnvRequireClaude set to 1 turns "the CLI cannot be installed" from a
	// skip into a failure (CI sets it once the install has succeeded).
	EnvRequireClaude = "KNOT_REQUIRE_CLAUDE"
)

// ClaudeCLI returns the path of the real Claude Code CLI, version
// ClaudeVersion, for a test that runs it (see agenttest.RealCLI.Find): from
// $KNOT_CLAUDE_BIN, else scripts/install-claude; it skips, or fails with
// KNOT_REQUIRE_CLAUDE=1, when the CLI cannot be had.
//
// Run the CLI with the environment of Server.ClaudeEnv and a deadline: it
// retries some API errors forever.
func ClaudeCLI(tb testing.TB) string { return CLI.Find(tb) }

// CLI is the pinned Claude Code CLI; ClaudeCLI finds it.
var CLI = agenttest.RealCLI{
	Name: "Claude Code CLI", Program: "claude", Version: ClaudeVersion,
	EnvBin: EnvClaudeBin, EnvRequire: EnvRequireClaude, Script: "scripts/install-claude", Needs: "node >= 18",
	// "2.1.330 (Claude Code)"
	Says: func(out string) bool { return strings.HasPrefix(out, ClaudeVersion+" ") },
}

// ClaudeEnv returns a complete environment for running the real Claude Code
// CLI against s, with home as its home directory: Claude Code keeps its
// configuration and sessions there (home/.claude/projects/<cwd>/), so give
// every turn of one conversation the same home (a t.TempDir()). It also
// serves as the CLI's temporary directory, so that nothing is left in the
// system's.
//
// The environment is hermetic: nothing is inherited but PATH (and, on
// Windows, SystemRoot and PATHEXT), so a developer's own Claude Code
// settings, credentials or proxies cannot leak in. With it the CLI
// connects to nothing but s (checked with strace on Linux).
func (s *Server) ClaudeEnv(home string) []string {
	env := []string{
		"HOME=" + home,
		"USERPROFILE=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"TMPDIR=" + home,
		"TMP=" + home,
		"TEMP=" + home,
		"ANTHROPIC_BASE_URL=" + s.URL,
		"ANTHROPIC_API_KEY=sk-dummy",
		// Without these Claude Code also probes ANTHROPIC_BASE_URL/api/hello
		// and resolves its telemetry and error-reporting hosts.
		"DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
	}
	for _, name := range []string{"PATH", "SystemRoot", "PATHEXT"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}
