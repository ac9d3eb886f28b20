package agenttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// realCLI is one pinned agent CLI that tests run for real: installed by the
// repository's script, or named by an environment variable.
type realCLI struct {
	name, program, version string // for messages: "Gemini CLI", "gemini", "0.61.0"
	// envBin names the binary to use instead of running script;
	// envRequire=1 turns "cannot be had" from a skip into a failure.
	envBin, envRequire string
	script             string // the installer, relative to the repository root
	needs              string // what the installer needs besides npm: "node >= 20"
	// says reports whether the trimmed output of --version is the pinned
	// version's.
	says func(out string) bool
}

// find returns the path of the CLI for a test that runs it. It uses
// $envBin when that is set, and otherwise runs the install script, which
// installs the CLI from the npm registry into the repository's git-ignored
// .cache/ the first time and just prints its path afterwards.
//
// When the CLI cannot be had (no node or npm, no registry, an unsupported
// platform), find skips the test with a message saying why and how to
// install it; with $envRequire=1 it fails the test instead. An $envBin that
// does not run as the pinned version always fails.
func (c realCLI) find(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv(c.envBin); bin != "" {
		if err := c.check(bin); err != nil {
			tb.Fatalf("agenttest: $%s: %v", c.envBin, err)
		}
		return bin
	}
	bin, err := runInstaller(c.script, c.envBin)
	if err == nil {
		err = c.check(bin)
	}
	if err != nil {
		if os.Getenv(c.envRequire) == "1" {
			tb.Fatalf("agenttest: %s=1 but the real %s is unavailable: %v", c.envRequire, c.name, err)
		}
		tb.Skipf("\n*** SKIPPING: the real %s %s is unavailable: %v\n"+
			"*** Install it with %s (needs %s, npm and the npm registry), or set\n"+
			"*** $%s to a %s %s binary. $%s=1 makes this a failure.",
			c.name, c.version, err, c.script, c.needs, c.envBin, c.program, c.version, c.envRequire)
	}
	return bin
}

// check reports whether bin runs and says it is the pinned version.
func (c realCLI) check(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.WaitDelay = waitDelay
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("run %s --version: %w", bin, err)
	}
	if got := strings.TrimSpace(string(out)); !c.says(got) {
		return fmt.Errorf("%s --version = %q; want %s %s", bin, got, c.program, c.version)
	}
	return nil
}

// lastLine returns the last line of s.
func lastLine(s string) string {
	lines := strings.Split(s, "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
