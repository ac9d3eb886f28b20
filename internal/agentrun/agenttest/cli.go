package agenttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// RealCLI is one pinned agent CLI that tests run for real: installed by the
// repository's script, or named by an environment variable. Each agent's
// test package declares its own (claudetest.Claude, …) and a function
// that calls Find.
type RealCLI struct {
	Name, Program, Version string // for messages: "Gemini CLI", "gemini", "0.61.0"
	// EnvBin names the binary to use instead of running Script;
	// EnvRequire=1 turns "cannot be had" from a skip into a failure.
	EnvBin, EnvRequire string
	Script             string // the installer, relative to the repository root
	Needs              string // what the installer needs besides npm: "node >= 20"
	// Says reports whether the trimmed output of --version is the pinned
	// version's.
	Says func(out string) bool
}

// Find returns the path of the CLI for a test that runs it. It uses
// $EnvBin when that is set, and otherwise runs the install script, which
// installs the CLI from the npm registry into the repository's git-ignored
// .cache/ the first time and just prints its path afterwards.
//
// When the CLI cannot be had (no node or npm, no registry, an unsupported
// platform), Find skips the test with a message saying why and how to
// install it; with $envRequire=1 it fails the test instead. An $EnvBin that
// does not run as the pinned version always fails.
func (c RealCLI) Find(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv(c.EnvBin); bin != "" {
		if err := c.check(bin); err != nil {
			tb.Fatalf("agenttest: $%s: %v", c.EnvBin, err)
		}
		return bin
	}
	bin, err := runInstaller(c.Script, c.EnvBin)
	if err == nil {
		err = c.check(bin)
	}
	if err != nil {
		if os.Getenv(c.EnvRequire) == "1" {
			tb.Fatalf("agenttest: %s=1 but the real %s is unavailable: %v", c.EnvRequire, c.Name, err)
		}
		tb.Skipf("\n*** SKIPPING: the real %s %s is unavailable: %v\n"+
			"*** Install it with %s (needs %s, npm and the npm registry), or set\n"+
			"*** $%s to a %s %s binary. $%s=1 makes this a failure.",
			c.Name, c.Version, err, c.Script, c.Needs, c.EnvBin, c.Program, c.Version, c.EnvRequire)
	}
	return bin
}

// check reports whether bin runs and says it is the pinned version.
func (c RealCLI) check(bin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.WaitDelay = waitDelay
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("run %s --version: %w", bin, err)
	}
	if got := strings.TrimSpace(string(out)); !c.Says(got) {
		return fmt.Errorf("%s --version = %q; want %s %s", bin, got, c.Program, c.Version)
	}
	return nil
}

// LastLine returns the last line of s.
func LastLine(s string) string {
	lines := strings.Split(s, "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Time limits for the helper's own subprocesses.
const (
	installTimeout = 10 * time.Minute
	versionTimeout = time.Minute
	waitDelay      = 10 * time.Second
)

// runInstaller runs the repository's install script (a path relative to
// its root) and returns the path it prints; binEnv is the variable to set
// instead where the script cannot run.
func runInstaller(installScript, binEnv string) (string, error) {
	if runtime.GOOS == "windows" {
		return "", fmt.Errorf("%s is a bash script; on Windows set $%s", installScript, binEnv)
	}
	root, err := FindRoot(installScript)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, filepath.FromSlash(installScript)))
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = waitDelay // npm may outlive a killed script
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", installScript, err, tail(stderr.String(), 2000))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	bin := strings.TrimSpace(lines[len(lines)-1])
	if bin == "" {
		return "", fmt.Errorf("%s printed no path\n%s", installScript, tail(stderr.String(), 2000))
	}
	return bin, nil
}

// FindRoot returns the nearest directory at or above the working directory
// that holds installScript.
func FindRoot(installScript string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", installScript, err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(installScript))); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find %s: %w", installScript, err)
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no %s at or above %s", installScript, wd)
		}
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
