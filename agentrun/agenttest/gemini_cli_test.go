package agenttest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// callGeminiCLI calls GeminiCLI with a recordingTB on a goroutine of its own.
func callGeminiCLI(t *testing.T) (bin string, tb *recordingTB) {
	tb = &recordingTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		bin = GeminiCLI(tb)
	}()
	<-done
	return bin, tb
}

func TestGeminiCLI_ChecksConfiguredBinary(t *testing.T) {
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
		{"pinned version", self, GeminiVersion, "", self, ""},
		{"other version", self, "9.9.9", "", "", `--version = "9.9.9"; want ` + GeminiVersion},
		{"missing binary", t.TempDir() + "/gemini", GeminiVersion, "", "", "$KNOT_GEMINI_BIN: run "},
		{"missing binary, required", t.TempDir() + "/gemini", GeminiVersion, "1", "", "$KNOT_GEMINI_BIN: run "},
	}
	t.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvGeminiBin, tt.bin)
			t.Setenv(EnvRequireGemini, tt.require)
			t.Setenv(fakeGeminiVersionEnv, tt.version)
			bin, tb := callGeminiCLI(t)
			if tb.skipped != "" {
				t.Errorf("GeminiCLI with $%s=%s skipped: %s", EnvGeminiBin, tt.bin, tb.skipped)
			}
			if tt.wantFail == "" && (bin != tt.wantBin || tb.failed != "") {
				t.Errorf("GeminiCLI with $%s=%s = %q, failure %q; want %q", EnvGeminiBin, tt.bin, bin, tb.failed, tt.wantBin)
			}
			if tt.wantFail != "" && !strings.Contains(tb.failed, tt.wantFail) {
				t.Errorf("GeminiCLI with $%s=%s failed with %q; want a failure containing %q", EnvGeminiBin, tt.bin, tb.failed, tt.wantFail)
			}
		})
	}
}

func TestGeminiCLI_SkipsOrFailsWhenInstallFails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("scripts/install-gemini is a bash script")
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
			t.Setenv("KNOT_GEMINI_CACHE", filepath.Join(file, "cache"))
			t.Setenv(EnvGeminiBin, "")
			t.Setenv(EnvRequireGemini, tt.require)
			bin, tb := callGeminiCLI(t)
			msg := tb.failed
			if tt.wantSkip {
				msg = tb.skipped
			}
			if bin != "" || msg == "" {
				t.Fatalf("GeminiCLI = %q, skipped %q, failed %q; want it to skip %t, else fail", bin, tb.skipped, tb.failed, tt.wantSkip)
			}
			for _, want := range []string{"scripts/install-gemini: exit status 1", "install-gemini: cannot create " + file} {
				if !strings.Contains(msg, want) {
					t.Errorf("GeminiCLI message %q does not say %q", msg, want)
				}
			}
			if tt.wantSkip && !strings.Contains(msg, "SKIPPING") {
				t.Errorf("GeminiCLI skip message %q is not loud", msg)
			}
		})
	}
}
