package agenttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// GeminiVersion is the Gemini CLI release knotd's tests are written
// against: the one scripts/install-gemini installs and the fixtures in
// agentrun/testdata/gemini-cli-0.61.0 were recorded with.
const GeminiVersion = "0.61.0"

// The environment variables GeminiCLI reads.
const (
	// EnvGeminiBin names the gemini binary to use instead of running
	// scripts/install-gemini (scripts/test sets it after installing).
	EnvGeminiBin = "KNOT_GEMINI_BIN"
	// EnvRequireGemini set to 1 turns "the CLI cannot be installed" from a
	// skip into a failure (CI sets it once the install has succeeded).
	EnvRequireGemini = "KNOT_REQUIRE_GEMINI"
)

// geminiInstallScript is the repository's Gemini CLI installer, relative
// to its root.
const geminiInstallScript = "scripts/install-gemini"

// GeminiCLI returns the path of the real Gemini CLI, version GeminiVersion,
// for a test that runs it. It uses $KNOT_GEMINI_BIN when that is set, and
// otherwise runs scripts/install-gemini, which installs the CLI from the
// npm registry into the repository's git-ignored .cache/ the first time and
// just prints its path afterwards.
//
// When the CLI cannot be had (no node >= 20 or npm, no registry), GeminiCLI
// skips the test with a message saying why and how to install it; with
// KNOT_REQUIRE_GEMINI=1 it fails the test instead. A $KNOT_GEMINI_BIN that
// does not run as the pinned version always fails.
//
// Run the CLI with the environment of GeminiServer.GeminiEnv and a
// deadline: it retries server errors with backoff for minutes.
func GeminiCLI(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv(EnvGeminiBin); bin != "" {
		if err := checkGemini(bin); err != nil {
			tb.Fatalf("agenttest: $%s: %v", EnvGeminiBin, err)
		}
		return bin
	}
	bin, err := runInstaller(geminiInstallScript, EnvGeminiBin)
	if err == nil {
		err = checkGemini(bin)
	}
	if err != nil {
		if os.Getenv(EnvRequireGemini) == "1" {
			tb.Fatalf("agenttest: %s=1 but the real Gemini CLI is unavailable: %v", EnvRequireGemini, err)
		}
		tb.Skipf("\n*** SKIPPING: the real Gemini CLI %s is unavailable: %v\n"+
			"*** Install it with %s (needs node >= 20, npm and the npm registry), or set\n"+
			"*** $%s to a gemini %s binary. $%s=1 makes this a failure.",
			GeminiVersion, err, geminiInstallScript, EnvGeminiBin, GeminiVersion, EnvRequireGemini)
	}
	return bin
}

// checkGemini reports whether bin runs and says it is GeminiVersion.
func checkGemini(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.WaitDelay = waitDelay
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("run %s --version: %w", bin, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if got := strings.TrimSpace(lines[len(lines)-1]); got != GeminiVersion {
		return fmt.Errorf("%s --version = %q; want %s", bin, strings.TrimSpace(string(out)), GeminiVersion)
	}
	return nil
}
