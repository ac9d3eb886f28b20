package agenttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CodexVersion is the Codex CLI release knotd's tests are written against:
// the one scripts/install-codex installs and the fixtures in
// agentrun/testdata/codex-0.169.0 were recorded with.
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

// codexInstallScript is the repository's Codex installer, relative to its root.
const codexInstallScript = "scripts/install-codex"

// CodexCLI returns the path of the real OpenAI Codex CLI, version
// CodexVersion, for a test that runs it. It uses $KNOT_CODEX_BIN when that
// is set, and otherwise runs scripts/install-codex, which installs the CLI
// from the npm registry into the repository's git-ignored .cache/ the first
// time and just prints its path afterwards. The path is the npm package's
// node wrapper: node must be on the PATH of the environment it runs in.
//
// When the CLI cannot be had (no node or npm, no registry, an unsupported
// platform), CodexCLI skips the test with a message saying why and how to
// install it; with KNOT_REQUIRE_CODEX=1 it fails the test instead. A
// $KNOT_CODEX_BIN that does not run as the pinned version always fails.
//
// Run the CLI with the environment of OpenAI.CodexEnv and a deadline.
func CodexCLI(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv(EnvCodexBin); bin != "" {
		if err := checkCodex(bin); err != nil {
			tb.Fatalf("agenttest: $%s: %v", EnvCodexBin, err)
		}
		return bin
	}
	bin, err := runInstaller(codexInstallScript, EnvCodexBin)
	if err == nil {
		err = checkCodex(bin)
	}
	if err != nil {
		if os.Getenv(EnvRequireCodex) == "1" {
			tb.Fatalf("agenttest: %s=1 but the real Codex CLI is unavailable: %v", EnvRequireCodex, err)
		}
		tb.Skipf("\n*** SKIPPING: the real Codex CLI %s is unavailable: %v\n"+
			"*** Install it with %s (needs node >= 18, npm and the npm registry), or set\n"+
			"*** $%s to a codex %s binary. $%s=1 makes this a failure.",
			CodexVersion, err, codexInstallScript, EnvCodexBin, CodexVersion, EnvRequireCodex)
	}
	return bin
}

// checkCodex reports whether bin runs and says it is CodexVersion.
func checkCodex(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.WaitDelay = waitDelay
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("run %s --version: %w", bin, err)
	}
	if got, want := strings.TrimSpace(string(out)), "codex-cli "+CodexVersion; got != want {
		return fmt.Errorf("%s --version = %q; want %q", bin, got, want)
	}
	return nil
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
