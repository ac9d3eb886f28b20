package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/stretchr/testify/require"
)

// asKnotd is the environment variable that makes the test binary run
// knotd's main instead of the tests (the os/exec test pattern), so that
// tests can start real knotd processes.
const asKnotd = "KNOTD_TEST_AS_KNOTD"

func TestMain(m *testing.M) {
	fakeTool()
	fakeagent.Main(map[string]fakeagent.Behaviour{blockRunning: blockRunningBehaviour, gated: gatedBehaviour, looper: looperBehaviour})
	if os.Getenv(asKnotd) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// Environment of the fake service manager tools (systemctl, launchctl)
// that tests put first on PATH: links to the test binary, which records
// its arguments, a line each, in the file envFakeToolLog and exits with
// envFakeToolExit (0 if unset), saying envFakeToolSay on standard error.
const (
	envFakeToolLog  = "KNOTD_TEST_FAKE_TOOL_LOG"
	envFakeToolExit = "KNOTD_TEST_FAKE_TOOL_EXIT"
	envFakeToolSay  = "KNOTD_TEST_FAKE_TOOL_SAY"
)

// fakeTool is the fake systemctl or launchctl when the test binary runs
// under either name; otherwise it returns.
func fakeTool() {
	name := filepath.Base(os.Args[0])
	logFile := os.Getenv(envFakeToolLog)
	if (name != "systemctl" && name != "launchctl") || logFile == "" {
		return
	}
	f, err := os.OpenFile(logFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		_, err = fmt.Fprintf(f, "%s %s\n", name, strings.Join(os.Args[1:], " "))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake", name+":", err)
		os.Exit(125)
	}
	fmt.Fprint(os.Stderr, os.Getenv(envFakeToolSay))
	code, _ := strconv.Atoi(os.Getenv(envFakeToolExit))
	os.Exit(code)
}

// waitTimeout bounds every wait of these tests.
const waitTimeout = 20 * time.Second

// setup isolates knotd's user configuration and state directory in a
// temporary XDG_CONFIG_HOME and XDG_STATE_HOME and returns a new vault
// directory.
func setup(t *testing.T) (vault, configDir string) {
	t.Helper()
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	vault, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return vault, filepath.Join(xdg, "knotd")
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// knotd runs run in-process and returns its exit status and output.
func knotd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	if err != nil {
		errOut.WriteString(errorLine(err) + "\n")
	}
	return exitCode(err), out.String(), errOut.String()
}

// knotdProcess returns a command that runs knotd as its own process.
func knotdProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(fakeagent.Program(t), args...)
	cmd.Env = append(os.Environ(), asKnotd+"=1")
	return cmd
}
