package geminitest

import (
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// GeminiVersion is the Gemini CLI release knotd's tests are written
// against: the one scripts/install-gemini installs and the fixtures in
// agents/gemini/testdata/recorded and recorded-acp were recorded with.
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

// GeminiCLI returns the path of the real Gemini CLI, version GeminiVersion, for
// a test that runs it (see agenttest.RealCLI.Find): from $KNOT_GEMINI_BIN, else
// scripts/install-gemini; it skips, or fails with KNOT_REQUIRE_GEMINI=1, when the CLI cannot
// be had.
//
// Run the CLI with the environment of GeminiServer.GeminiEnv and a
// deadline: it retries server errors with backoff for minutes.
func GeminiCLI(tb testing.TB) string { return CLI.Find(tb) }

// CLI is the pinned Gemini CLI; GeminiCLI finds it.
var CLI = agenttest.RealCLI{
	Name: "Gemini CLI", Program: "gemini", Version: GeminiVersion,
	EnvBin: EnvGeminiBin, EnvRequire: EnvRequireGemini, Script: "scripts/install-gemini", Needs: "node >= 20",
	Says: func(out string) bool { return agenttest.LastLine(out) == GeminiVersion },
}
