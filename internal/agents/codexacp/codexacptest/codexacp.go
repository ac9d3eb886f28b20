// Package codexacptest helps tests run the real Codex ACP adapter,
// codex-acp, against the OpenAI stand-in of codextest.
package codexacptest

import (
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// CodexACPVersion is the @agentclientprotocol/codex-acp release knotd's
// tests are written against: the one scripts/install-codex-acp installs
// and the fixtures in agents/codexacp/testdata/recorded were recorded
// with. It runs `codex app-server` of @openai/codex 0.166.0, not
// codextest.CodexVersion.
const CodexACPVersion = "2.6.0"

// The environment variables CodexACP reads.
const (
	// EnvCodexACPBin names the codex-acp binary to use instead of running
	// scripts/install-codex-acp (scripts/test sets it after installing).
	EnvCodexACPBin = "KNOT_CODEX_ACP_BIN"
	// EnvRequireCodexACP set to 1 turns "the adapter cannot be installed"
	// from a skip into a failure.
	EnvRequireCodexACP = "KNOT_REQUIRE_CODEX_ACP"
)

// CodexACP returns the path of the real Codex ACP adapter, codex-acp
// CodexACPVersion, for a test that runs it (see agenttest.RealCLI.Find):
// from $KNOT_CODEX_ACP_BIN, else scripts/install-codex-acp; it skips, or
// fails with KNOT_REQUIRE_CODEX_ACP=1, when the adapter cannot be had.
//
// The path is a node script: node must be on the PATH of the environment
// it runs in. Run it with the environment of codextest.OpenAI.CodexEnv
// (the app-server it runs reads CODEX_HOME/config.toml) and a deadline.
func CodexACP(tb testing.TB) string { return CLI.Find(tb) }

// CLI is the pinned Codex ACP adapter; CodexACP finds it.
var CLI = agenttest.RealCLI{
	Name: "Codex ACP adapter", Program: "codex-acp", Version: CodexACPVersion,
	EnvBin: EnvCodexACPBin, EnvRequire: EnvRequireCodexACP, Script: "scripts/install-codex-acp", Needs: "node >= 20",
	// "@agentclientprotocol/codex-acp 2.6.0"
	Says: func(out string) bool { return strings.HasSuffix(out, "codex-acp "+CodexACPVersion) },
}
