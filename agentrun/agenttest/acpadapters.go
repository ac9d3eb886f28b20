package agenttest

import (
	"strings"
	"testing"
)

// The ACP adapters knotd's tests are written against: the releases
// scripts/install-claude-acp and scripts/install-codex-acp install and the
// fixtures in agentrun/testdata/acp were recorded with.
const (
	// ClaudeACPVersion is @agentclientprotocol/claude-agent-acp's. It
	// spawns the Claude Code CLI of @anthropic-ai/claude-agent-sdk 0.3.318
	// (Claude Code 2.1.318), not ClaudeVersion.
	ClaudeACPVersion = "0.101.0"
	// CodexACPVersion is @agentclientprotocol/codex-acp's. It runs
	// `codex app-server` of @openai/codex 0.166.0, not CodexVersion.
	CodexACPVersion = "2.6.0"
)

// The environment variables ClaudeACP and CodexACP read.
const (
	// EnvClaudeACPBin names the claude-agent-acp binary to use instead of
	// running scripts/install-claude-acp (scripts/test sets it after
	// installing).
	EnvClaudeACPBin = "KNOT_CLAUDE_ACP_BIN"
	// EnvRequireClaudeACP set to 1 turns "the adapter cannot be installed"
	// from a skip into a failure.
	EnvRequireClaudeACP = "KNOT_REQUIRE_CLAUDE_ACP"
	// EnvCodexACPBin names the codex-acp binary to use instead of running
	// scripts/install-codex-acp (scripts/test sets it after installing).
	EnvCodexACPBin = "KNOT_CODEX_ACP_BIN"
	// EnvRequireCodexACP set to 1 turns "the adapter cannot be installed"
	// from a skip into a failure.
	EnvRequireCodexACP = "KNOT_REQUIRE_CODEX_ACP"
)

// ClaudeACP returns the path of the real Claude Code ACP adapter,
// claude-agent-acp ClaudeACPVersion, for a test that runs it (see
// realCLI.find): from $KNOT_CLAUDE_ACP_BIN, else
// scripts/install-claude-acp; it skips, or fails with
// KNOT_REQUIRE_CLAUDE_ACP=1, when the adapter cannot be had.
//
// The path is a node script: node must be on the PATH of the environment
// it runs in. Run it with the environment of Server.ClaudeEnv (it passes
// ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY on to the Claude Code it
// spawns) and a deadline.
func ClaudeACP(tb testing.TB) string { return claudeACP.find(tb) }

var claudeACP = realCLI{
	name: "Claude Code ACP adapter", program: "claude-agent-acp", version: ClaudeACPVersion,
	envBin: EnvClaudeACPBin, envRequire: EnvRequireClaudeACP, script: "scripts/install-claude-acp", needs: "node >= 20",
	says: func(out string) bool { return out == ClaudeACPVersion },
}

// CodexACP returns the path of the real Codex ACP adapter, codex-acp
// CodexACPVersion, for a test that runs it (see realCLI.find): from
// $KNOT_CODEX_ACP_BIN, else scripts/install-codex-acp; it skips, or fails
// with KNOT_REQUIRE_CODEX_ACP=1, when the adapter cannot be had.
//
// The path is a node script: node must be on the PATH of the environment
// it runs in. Run it with the environment of OpenAI.CodexEnv (the
// app-server it runs reads CODEX_HOME/config.toml) and a deadline.
func CodexACP(tb testing.TB) string { return codexACP.find(tb) }

var codexACP = realCLI{
	name: "Codex ACP adapter", program: "codex-acp", version: CodexACPVersion,
	envBin: EnvCodexACPBin, envRequire: EnvRequireCodexACP, script: "scripts/install-codex-acp", needs: "node >= 20",
	// "@agentclientprotocol/codex-acp 2.6.0"
	says: func(out string) bool { return strings.HasSuffix(out, "codex-acp "+CodexACPVersion) },
}
