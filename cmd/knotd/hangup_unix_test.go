//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// agentOfRuns returns, for each note, the agent of its newest run, from
// knotd runs --json.
func agentOfRuns(t *testing.T, vault string) map[string]string {
	t.Helper()
	out, err := knotdProcess(t, "runs", "--json", vault).Output()
	require.NoError(t, err)
	var runs []runJSON
	require.NoError(t, json.Unmarshal(out, &runs), "%s", out)
	got := map[string]string{}
	for _, r := range runs { // newest first
		if _, seen := got[r.Strand]; !seen && r.Finished {
			got[r.Strand] = r.Agent
		}
	}
	return got
}

// TestKnotd_HangUpReloadsTheConfiguration: watching, SIGHUP reloads the
// user's configuration without dropping the run in progress, and a config
// file changed while knotd watches is reloaded without a signal; a
// configuration that does not load leaves the one in force, said.
func TestKnotd_HangUpReloadsTheConfiguration(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	gatedConfig := fmt.Sprintf("default_agent: gated\nagents:\n  gated:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, gated, fakeagent.EnvState, state)
	cfg := filepath.Join(c, "config.yaml")
	writeFile(t, cfg, gatedConfig)
	open := func(note string) { writeFile(t, filepath.Join(state, "go-"+note), "") }
	cmd, rest := startWatching(t, "--debounce", "50ms", v)

	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	testutil.WaitFor(t, waitTimeout, "a.md's run to start", func() bool {
		_, st := status(t, v)
		return len(st.Running) == 1
	})
	writeFile(t, cfg, "default_agent: digest\n")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	writeFile(t, filepath.Join(v, "b.md"), "# B\n")
	testutil.WaitFor(t, waitTimeout, "b.md answered by the reloaded default agent", func() bool {
		return agentOfRuns(t, v)["b.md"] == "digest"
	})
	open("a.md")
	testutil.WaitFor(t, waitTimeout, "a.md's run, started before the reload, to finish", func() bool {
		return agentOfRuns(t, v)["a.md"] == "gated"
	})

	// Changed while watching, no signal: picked up before the change
	// that follows it runs.
	writeFile(t, cfg, gatedConfig)
	open("c.md")
	writeFile(t, filepath.Join(v, "c.md"), "# C\n")
	testutil.WaitFor(t, waitTimeout, "c.md answered by the agent of the changed config", func() bool {
		return agentOfRuns(t, v)["c.md"] == "gated"
	})

	// A mistake: said, and the configuration in force stays.
	writeFile(t, cfg, "default_agent: [\n")
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	open("d.md")
	writeFile(t, filepath.Join(v, "d.md"), "# D\n")
	testutil.WaitFor(t, waitTimeout, "d.md answered by the agent in force", func() bool {
		return agentOfRuns(t, v)["d.md"] == "gated"
	})

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait(), "knotd after SIGHUP and SIGINT")
	logs := <-rest
	for _, want := range []string{`msg="configuration reloaded" why=SIGHUP`, `msg="configuration reloaded" why="a config file changed"`, `msg="cannot reload the configuration; knotd goes on with the one it had"`} {
		require.Contains(t, logs, want)
	}
}

// TestKnotd_HangUpStopsAPass: SIGHUP stops knotd --once as SIGINT does
// (exit 1, "interrupted"), and the agent's process and the child it left
// (which ignores SIGTERM) are gone: before, SIGHUP ended knotd at once
// (exit 129) and the agent's child kept running.
func TestKnotd_HangUpStopsAPass(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: stubborn\nagents:\n  stubborn:\n    command: [%q, hang]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Stubborn, fakeagent.EnvState, state))
	if out, err := knotdProcess(t, "--once", v).CombinedOutput(); err != nil {
		t.Fatalf("knotd --once: %v\n%s", err, out)
	}
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	cmd := knotdProcess(t, "--once", v)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	pidFile := filepath.Join(state, fakeagent.GrandchildPIDFile)
	testutil.WaitFor(t, waitTimeout, "the agent's child", func() bool { _, err := os.Stat(pidFile); return err == nil })
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(string(b))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	err = cmd.Wait()
	var ee interface{ ExitCode() int }
	require.True(t, errors.As(err, &ee), "knotd --once after SIGHUP: %v\n%s", err, out.String())
	require.Equal(t, exitFailed, ee.ExitCode(), "%s", out.String())
	require.Contains(t, out.String(), "interrupted")
	testutil.WaitFor(t, waitTimeout, "the agent's child to be gone", func() bool { return !processAlive(pid) })
}

// processAlive reports whether a process exists and is not a zombie.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		// No /proc (macOS): the process exists, zombie or not.
		_, serr := os.Stat("/proc/self/stat")
		return !errors.Is(err, os.ErrNotExist) || serr != nil
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}
