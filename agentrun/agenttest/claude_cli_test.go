package agenttest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
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

// callClaudeCLI calls ClaudeCLI with a recordingTB on a goroutine of its own.
func callClaudeCLI(t *testing.T) (bin string, tb *recordingTB) {
	tb = &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		bin = ClaudeCLI(tb)
	}()
	<-done
	return bin, tb
}

func TestClaudeCLI_ChecksConfiguredBinary(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, bin, version string
		require            string
		wantBin            string
		wantFail           string // in the failure message; "" for success
	}{
		{"pinned version", self, ClaudeVersion, "", self, ""},
		{"other version", self, "9.9.9", "", "", `--version = "9.9.9 (Claude Code)"; want ` + ClaudeVersion},
		{"missing binary", t.TempDir() + "/claude", ClaudeVersion, "", "", "$KNOT_CLAUDE_BIN: run "},
		{"missing binary, required", t.TempDir() + "/claude", ClaudeVersion, "1", "", "$KNOT_CLAUDE_BIN: run "},
	}
	// The race detector's one-second pause at exit is of no use here.
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvClaudeBin, tt.bin)
			t.Setenv(EnvRequireClaude, tt.require)
			t.Setenv(fakeVersionEnv, tt.version)
			bin, tb := callClaudeCLI(t)
			if tb.skipped != "" {
				t.Errorf("ClaudeCLI with $%s=%s skipped: %s", EnvClaudeBin, tt.bin, tb.skipped)
			}
			if tt.wantFail == "" && (bin != tt.wantBin || tb.failed != "") {
				t.Errorf("ClaudeCLI with $%s=%s = %q, failure %q; want %q", EnvClaudeBin, tt.bin, bin, tb.failed, tt.wantBin)
			}
			if tt.wantFail != "" && !strings.Contains(tb.failed, tt.wantFail) {
				t.Errorf("ClaudeCLI with $%s=%s failed with %q; want a failure containing %q", EnvClaudeBin, tt.bin, tb.failed, tt.wantFail)
			}
		})
	}
}

func TestClaudeCLI_SkipsOrFailsWhenInstallFails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("scripts/install-claude is a bash script")
	}
	tests := []struct {
		name, require string
		wantSkip      bool
	}{
		{"skips", "", true},
		{"fails when required", "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A cache directory that cannot be created, below a file.
			file := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("KNOT_CLAUDE_CACHE", filepath.Join(file, "cache"))
			t.Setenv(EnvClaudeBin, "")
			t.Setenv(EnvRequireClaude, tt.require)
			bin, tb := callClaudeCLI(t)
			msg := tb.failed
			if tt.wantSkip {
				msg = tb.skipped
			}
			if bin != "" || msg == "" {
				t.Fatalf("ClaudeCLI = %q, skipped %q, failed %q; want it to skip %t, else fail", bin, tb.skipped, tb.failed, tt.wantSkip)
			}
			for _, want := range []string{"scripts/install-claude: exit status 1", "install-claude: cannot create " + file} {
				if !strings.Contains(msg, want) {
					t.Errorf("ClaudeCLI message %q does not say %q", msg, want)
				}
			}
			if tt.wantSkip && !strings.Contains(msg, "SKIPPING") {
				t.Errorf("ClaudeCLI skip message %q is not loud", msg)
			}
		})
	}
}
