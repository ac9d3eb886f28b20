// Package claudeacptest helps tests run the real Claude Code ACP adapter,
// claude-agent-acp, against the Anthropic stand-in of claudetest.
package claudeacptest

import (
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// ClaudeACPVersion is the @agentclientprotocol/claude-agent-acp release
// knotd's tests are written against: the one scripts/install-claude-acp
// installs and the fixtures in agents/claudeacp/testdata/recorded were
// recorded with. It spawns the Claude Code CLI of
// @anthropic-ai/claude-agent-sdk 0.3.318 (Claude Code 2.1.318), not
// claudetest.ClaudeVersion.
const ClaudeACPVersion = "0.101.0"

// The environment variables ClaudeACP reads.
const (
	// EnvClaudeACPBin names the claude-agent-acp binary to use instead of
	// running scripts/install-claude-acp (scripts/test sets it after
	// installing).
	EnvClaudeACPBin = "KNOT_CLAUDE_ACP_BIN"
	// EnvRequireClaudeACP set to 1 turns "the adapter cannot be installed"
	// from a skip into a failure.
	EnvRequireClaudeACP = "KNOT_REQUIRE_CLAUDE_ACP"
)

// ClaudeACP returns the path of the real Claude Code ACP adapter,
// claude-agent-acp ClaudeACPVersion, for a test that runs it (see
// agenttest.RealCLI.Find): from $KNOT_CLAUDE_ACP_BIN, else
// scripts/install-claude-acp; it skips, or fails with
// KNOT_REQUIRE_CLAUDE_ACP=1, when the adapter cannot be had.
//
// The path is a node script: node must be on the PATH of the environment
// it runs in. Run it with the environment of claudetest.Server.ClaudeEnv
// (it passes ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY on to the Claude
// Code it spawns) and a deadline.
func ClaudeACP(tb testing.TB) string { return CLI.Find(tb) }

// CLI is the pinned Claude Code ACP adapter; ClaudeACP finds it.
var CLI = agenttest.RealCLI{
	Name: "Claude Code ACP adapter", Program: "claude-agent-acp", Version: ClaudeACPVersion,
	EnvBin: EnvClaudeACPBin, EnvRequire: EnvRequireClaudeACP, Script: "scripts/install-claude-acp", Needs: "node >= 20",
	Says: func(out string) bool { return out == ClaudeACPVersion },
}
