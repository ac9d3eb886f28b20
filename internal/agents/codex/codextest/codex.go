package codextest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// CodexVersion is the Codex CLI release knotd's tests are written against:
// the one scripts/install-codex installs and the fixtures in
// agents/codex/testdata/recorded were recorded with.
const CodexVersion = "0.169.0"

// The environment variables CodexCLI reads.
const (
	// EnvCodexBin names the codex binary to use instead of running
	// scripts/install-codex (scripts/test sets it after installing).
	EnvCodexBin = "KNOT_CODEX_BIN"
	// EnvRequireCodex set to 1 turns "the CLI cannot be installed" from a
	// skip into a failure (CI sets it once the install has succeeded).
	EnvRequireCodex = "KNOT_REQUIRE_CODEX"
)

// CodexCLI returns the path of the real OpenAI Codex CLI, version CodexVersion, for
// a test that runs it (see agenttest.RealCLI.Find): from $KNOT_CODEX_BIN, else
// scripts/install-codex; it skips, or fails with KNOT_REQUIRE_CODEX=1, when the CLI cannot
// be had.
//
// The path is the npm package's node wrapper: node must be on the PATH of
// the environment it runs in. Run the CLI with the environment of
// CodexEnv and a deadline.
func CodexCLI(tb testing.TB) string { return CLI.Find(tb) }

// CLI is the pinned Codex CLI; CodexCLI finds it.
var CLI = agenttest.RealCLI{
	Name: "OpenAI Codex CLI", Program: "codex", Version: CodexVersion,
	EnvBin: EnvCodexBin, EnvRequire: EnvRequireCodex, Script: "scripts/install-codex", Needs: "node >= 18",
	Says: func(out string) bool { return out == "codex-cli "+CodexVersion },
}

// CodexHome returns the CODEX_HOME of CodexEnv(tb, dir): Codex keeps its
// configuration and its session store (CodexHome/sessions/) there.
func CodexHome(dir string) string {
	return filepath.Join(dir, "codex-home")
}

// CodexEnv prepares dir (a t.TempDir()) for running the real Codex CLI
// against s the way the fixtures were recorded, and returns a complete
// environment for it:
//
//   - HOME dir/home, TMPDIR dir/tmp, and CODEX_HOME dir/codex-home
//     (CodexHome), outside the temporary directory, where Codex would
//     refuse to create its helper links and warn;
//   - CodexHome/config.toml selecting a model provider "mock" with
//     base_url s.URL+"/v1", env_key OPENAI_API_KEY and wire_api
//     "responses", the only configuration the recording needed;
//   - OPENAI_API_KEY=dummy.
//
// Give every turn of one conversation the same dir. The environment is
// hermetic: nothing is inherited but PATH (the CLI is a node script; on
// Windows also SystemRoot and PATHEXT), so a developer's own Codex
// settings, credentials or proxies cannot leak in.
func (s *OpenAI) CodexEnv(tb testing.TB, dir string) []string {
	tb.Helper()
	home, tmp, codexHome := filepath.Join(dir, "home"), filepath.Join(dir, "tmp"), CodexHome(dir)
	for _, d := range []string{home, tmp, codexHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			tb.Fatalf("agenttest: %v", err)
		}
	}
	config := fmt.Sprintf(`model_provider = "mock"

[model_providers.mock]
name = "Mock Responses"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
`, s.URL+"/v1")
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		tb.Fatalf("agenttest: %v", err)
	}
	env := []string{
		"HOME=" + home,
		"USERPROFILE=" + home,
		"CODEX_HOME=" + codexHome,
		"TMPDIR=" + tmp,
		"TMP=" + tmp,
		"TEMP=" + tmp,
		"OPENAI_API_KEY=dummy",
	}
	for _, name := range []string{"PATH", "SystemRoot", "PATHEXT"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}
