package agenttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The ACP adapters knotd's tests are written against: the releases
// scripts/install-claude-acp and scripts/install-codex-acp install and the
// fixtures in agents/claudeacp, agents/codexacp and agents/opencode
// (testdata/recorded) were recorded with.
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

// OpenCodeVersion is the OpenCode release (npm opencode-ai) knotd's tests
// are written against: the one scripts/install-opencode installs.
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
// OpenCodeVersion, for a test that runs it (see realCLI.find): from
// $KNOT_OPENCODE_BIN, else scripts/install-opencode; it skips, or fails with
// KNOT_REQUIRE_OPENCODE=1, when the CLI cannot be had. Run it as
// `opencode acp` with the environment of Server.OpenCodeEnv and a deadline.
func OpenCode(tb testing.TB) string { return openCode.find(tb) }

var openCode = realCLI{
	name: "OpenCode CLI", program: "opencode", version: OpenCodeVersion,
	envBin: EnvOpenCodeBin, envRequire: EnvRequireOpenCode, script: "scripts/install-opencode", needs: "node >= 18",
	says: func(out string) bool { return out == OpenCodeVersion },
}

// OpenCodeEnv returns a complete environment for running the real OpenCode
// CLI against s, with home as its home directory (its XDG directories
// under it: OpenCode keeps its sessions in XDG_DATA_HOME/opencode). The
// configuration is OPENCODE_CONFIG_CONTENT: the model
// anthropic/claude-sonnet-4-5 through the anthropic provider with baseURL
// s.URL+"/v1" and a dummy key, and permission for edits set to permission
// ("ask", "allow" or "deny"); OpenCode fetches no model list and no update.
// The environment is hermetic: nothing is inherited but PATH (and, on
// Windows, SystemRoot and PATHEXT).
func (s *Server) OpenCodeEnv(home, permission string) []string {
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
