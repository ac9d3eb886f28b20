package agenttest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// callCodexCLI calls CodexCLI with a recordingTB on a goroutine of its own.
func callCodexCLI(t *testing.T) (bin string, tb *recordingTB) {
	tb = &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		bin = CodexCLI(tb)
	}()
	<-done
	return bin, tb
}

func TestCodexCLI_ChecksConfiguredBinary(t *testing.T) {
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
		{"pinned version", self, CodexVersion, "", self, ""},
		{"other version", self, "9.9.9", "", "", `--version = "codex-cli 9.9.9"; want "codex-cli ` + CodexVersion + `"`},
		{"missing binary", t.TempDir() + "/codex", CodexVersion, "", "", "$KNOT_CODEX_BIN: run "},
		{"missing binary, required", t.TempDir() + "/codex", CodexVersion, "1", "", "$KNOT_CODEX_BIN: run "},
	}
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvCodexBin, tt.bin)
			t.Setenv(EnvRequireCodex, tt.require)
			t.Setenv(fakeCodexVersionEnv, tt.version)
			bin, tb := callCodexCLI(t)
			if tb.skipped != "" {
				t.Errorf("CodexCLI with $%s=%s skipped: %s", EnvCodexBin, tt.bin, tb.skipped)
			}
			if tt.wantFail == "" && (bin != tt.wantBin || tb.failed != "") {
				t.Errorf("CodexCLI with $%s=%s = %q, failure %q; want %q", EnvCodexBin, tt.bin, bin, tb.failed, tt.wantBin)
			}
			if tt.wantFail != "" && !strings.Contains(tb.failed, tt.wantFail) {
				t.Errorf("CodexCLI with $%s=%s failed with %q; want a failure containing %q", EnvCodexBin, tt.bin, tb.failed, tt.wantFail)
			}
		})
	}
}

func TestCodexCLI_SkipsOrFailsWhenInstallFails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("scripts/install-codex is a bash script")
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
			t.Setenv("KNOT_CODEX_CACHE", filepath.Join(file, "cache"))
			t.Setenv(EnvCodexBin, "")
			t.Setenv(EnvRequireCodex, tt.require)
			bin, tb := callCodexCLI(t)
			msg := tb.failed
			if tt.wantSkip {
				msg = tb.skipped
			}
			if bin != "" || msg == "" {
				t.Fatalf("CodexCLI = %q, skipped %q, failed %q; want it to skip %t, else fail", bin, tb.skipped, tb.failed, tt.wantSkip)
			}
			for _, want := range []string{"scripts/install-codex: exit status 1", "install-codex: cannot create " + file} {
				if !strings.Contains(msg, want) {
					t.Errorf("CodexCLI message %q does not say %q", msg, want)
				}
			}
			if tt.wantSkip && !strings.Contains(msg, "SKIPPING") {
				t.Errorf("CodexCLI skip message %q is not loud", msg)
			}
		})
	}
}
