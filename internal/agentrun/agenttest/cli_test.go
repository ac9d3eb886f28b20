package agenttest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/agents/codex/codextest"
	"github.com/knotd/knotd/internal/agents/gemini/geminitest"
)

// fakeVersionEnv makes the test binary, re-executed, impersonate a claude
// binary answering --version with the variable's value.
const fakeVersionEnv = "AGENTTEST_FAKE_CLAUDE_VERSION"

// fakeCodexVersionEnv makes the test binary, re-executed, impersonate a
// codex binary answering --version with "codex-cli " and the variable's value.
const fakeCodexVersionEnv = "AGENTTEST_FAKE_CODEX_VERSION"

// fakeGeminiVersionEnv does the same for a gemini binary, which prints the
// bare version.
const fakeGeminiVersionEnv = "AGENTTEST_FAKE_GEMINI_VERSION"

func TestMain(m *testing.M) {
	if v := os.Getenv(fakeVersionEnv); v != "" {
		fmt.Printf("%s (Claude Code)\n", v)
		os.Exit(0)
	}
	if v := os.Getenv(fakeCodexVersionEnv); v != "" {
		fmt.Printf("codex-cli %s\n", v)
		os.Exit(0)
	}
	if v := os.Getenv(fakeGeminiVersionEnv); v != "" {
		fmt.Printf("%s\n", v)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// recordingTB is a testing.TB whose Skipf and Fatalf record their message
// and end the calling goroutine, as the real ones do.
type recordingTB struct {
	testing.TB
	skipped, failed string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fakeCLIs are the pinned CLIs, each with the variable that makes the
// test binary, re-executed, answer --version as that CLI would, and what
// that answer is for version 9.9.9.
var fakeCLIs = []struct {
	cli        agenttest.RealCLI
	find       func(testing.TB) string
	fakeEnv    string
	cacheEnv   string // the install script's cache directory
	other      string // --version of 9.9.9
	binaryName string
}{
	{claudetest.CLI, claudetest.ClaudeCLI, fakeVersionEnv, "KNOT_CLAUDE_CACHE", "9.9.9 (Claude Code)", "claude"},
	{codextest.CLI, codextest.CodexCLI, fakeCodexVersionEnv, "KNOT_CODEX_CACHE", "codex-cli 9.9.9", "codex"},
	{geminitest.CLI, geminitest.GeminiCLI, fakeGeminiVersionEnv, "KNOT_GEMINI_CACHE", "9.9.9", "gemini"},
}

// callCLI calls find with a recordingTB on a goroutine of its own.
func callCLI(t *testing.T, find func(testing.TB) string) (bin string, tb *recordingTB) {
	tb = &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		bin = find(tb)
	}()
	<-done
	return bin, tb
}

func TestRealCLI_ChecksConfiguredBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The race detector's one-second pause at exit is of no use here.
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	for _, c := range fakeCLIs {
		envBin := "$" + c.cli.EnvBin
		tests := []struct {
			name, bin, version string
			require            string
			wantBin            string
			wantFail           string // in the failure message; "" for success
		}{
			{"pinned version", self, c.cli.Version, "", self, ""},
			{"other version", self, "9.9.9", "", "", fmt.Sprintf("--version = %q; want %s %s", c.other, c.binaryName, c.cli.Version)},
			{"missing binary", t.TempDir() + "/" + c.binaryName, c.cli.Version, "", "", envBin + ": run "},
			{"missing binary, required", t.TempDir() + "/" + c.binaryName, c.cli.Version, "1", "", envBin + ": run "},
		}
		for _, tt := range tests {
			t.Run(c.binaryName+"/"+tt.name, func(t *testing.T) {
				t.Setenv(c.cli.EnvBin, tt.bin)
				t.Setenv(c.cli.EnvRequire, tt.require)
				t.Setenv(c.fakeEnv, tt.version)
				bin, tb := callCLI(t, c.find)
				if tb.skipped != "" {
					t.Errorf("with %s=%s it skipped: %s", envBin, tt.bin, tb.skipped)
				}
				if tt.wantFail == "" && (bin != tt.wantBin || tb.failed != "") {
					t.Errorf("with %s=%s = %q, failure %q; want %q", envBin, tt.bin, bin, tb.failed, tt.wantBin)
				}
				if tt.wantFail != "" && !strings.Contains(tb.failed, tt.wantFail) {
					t.Errorf("with %s=%s it failed with %q; want a failure containing %q", envBin, tt.bin, tb.failed, tt.wantFail)
				}
			})
		}
	}
}

func TestRealCLI_SkipsOrFailsWhenInstallFails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the install scripts are bash scripts")
	}
	for _, c := range fakeCLIs {
		for _, tt := range []struct {
			name, require string
			wantSkip      bool
		}{
			{"skips", "", true},
			{"fails when required", "1", false},
		} {
			t.Run(c.binaryName+"/"+tt.name, func(t *testing.T) {
				// A cache directory that cannot be created, below a file.
				file := filepath.Join(t.TempDir(), "file")
				if err := os.WriteFile(file, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				t.Setenv(c.cacheEnv, filepath.Join(file, "cache"))
				t.Setenv(c.cli.EnvBin, "")
				t.Setenv(c.cli.EnvRequire, tt.require)
				bin, tb := callCLI(t, c.find)
				msg := tb.failed
				if tt.wantSkip {
					msg = tb.skipped
				}
				if bin != "" || msg == "" {
					t.Fatalf("= %q, skipped %q, failed %q; want it to skip %t, else fail", bin, tb.skipped, tb.failed, tt.wantSkip)
				}
				script := c.cli.Script
				for _, want := range []string{script + ": exit status 1", strings.TrimPrefix(script, "scripts/") + ": cannot create " + file} {
					if !strings.Contains(msg, want) {
						t.Errorf("message %q does not say %q", msg, want)
					}
				}
				if tt.wantSkip && !strings.Contains(msg, "SKIPPING") {
					t.Errorf("skip message %q is not loud", msg)
				}
			})
		}
	}
}
