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

// ClaudeVersion is the Claude Code release knotd's tests are written
// against: the one scripts/install-claude installs and the fixtures in
// agents/claude/testdata/recorded were recorded with.
const ClaudeVersion = "2.1.330"

// The environment variables ClaudeCLI reads.
const (
	// EnvClaudeBin names the claude binary to use instead of running
	// scripts/install-claude (scripts/test sets it after installing).
	EnvClaudeBin = "KNOT_CLAUDE_BIN"
	// EnvRequireClaude set to 1 turns "the CLI cannot be installed" from a
	// skip into a failure (CI sets it once the install has succeeded).
	EnvRequireClaude = "KNOT_REQUIRE_CLAUDE"
)

// Time limits for the helper's own subprocesses.
const (
	installTimeout = 10 * time.Minute
	versionTimeout = time.Minute
	waitDelay      = 10 * time.Second
)

// ClaudeCLI returns the path of the real Claude Code CLI, version
// ClaudeVersion, for a test that runs it (see realCLI.find): from
// $KNOT_CLAUDE_BIN, else scripts/install-claude; it skips, or fails with
// KNOT_REQUIRE_CLAUDE=1, when the CLI cannot be had.
//
// Run the CLI with the environment of Server.ClaudeEnv and a deadline: it
// retries some API errors forever.
func ClaudeCLI(tb testing.TB) string { return claudeCLI.find(tb) }

var claudeCLI = realCLI{
	name: "Claude Code CLI", program: "claude", version: ClaudeVersion,
	envBin: EnvClaudeBin, envRequire: EnvRequireClaude, script: "scripts/install-claude", needs: "node >= 18",
	// "2.1.330 (Claude Code)"
	says: func(out string) bool { return strings.HasPrefix(out, ClaudeVersion+" ") },
}

// runInstaller runs the repository's install script (a path relative to
// its root) and returns the path it prints; binEnv is the variable to set
// instead where the script cannot run.
func runInstaller(installScript, binEnv string) (string, error) {
	if runtime.GOOS == "windows" {
		return "", fmt.Errorf("%s is a bash script; on Windows set $%s", installScript, binEnv)
	}
	root, err := findRoot(installScript)
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

// repoRoot returns the nearest directory at or above the working directory
// (a test's package directory) that holds the install script.
func repoRoot() (string, error) {
	return findRoot(claudeCLI.script)
}

// findRoot returns the nearest directory at or above the working directory
// that holds installScript.
func findRoot(installScript string) (string, error) {
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

// ClaudeEnv returns a complete environment for running the real Claude Code
// CLI against s, with home as its home directory: Claude Code keeps its
// configuration and sessions there (home/.claude/projects/<cwd>/), so give
// every turn of one conversation the same home (a t.TempDir()). It also
// serves as the CLI's temporary directory, so that nothing is left in the
// system's.
//
// The environment is hermetic: nothing is inherited but PATH (and, on
// Windows, SystemRoot and PATHEXT), so a developer's own Claude Code
// settings, credentials or proxies cannot leak in. With it the CLI
// connects to nothing but s (checked with strace on Linux).
func (s *Server) ClaudeEnv(home string) []string {
	env := []string{
		"HOME=" + home,
		"USERPROFILE=" + home,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
		"TMPDIR=" + home,
		"TMP=" + home,
		"TEMP=" + home,
		"ANTHROPIC_BASE_URL=" + s.URL,
		"ANTHROPIC_API_KEY=sk-dummy",
		// Without these Claude Code also probes ANTHROPIC_BASE_URL/api/hello
		// and resolves its telemetry and error-reporting hosts.
		"DISABLE_TELEMETRY=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
	}
	for _, name := range []string{"PATH", "SystemRoot", "PATHEXT"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
