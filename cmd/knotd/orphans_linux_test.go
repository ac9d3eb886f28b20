package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestKnotd_StartEndsWhatAKilledKnotdLeft: knotd is killed with SIGKILL
// while its agent runs; the kernel kills the agent (its parent-death
// signal) but not the child the agent started, which ignores SIGTERM and
// goes on running. The next start of knotd ends it, and says so.
func TestKnotd_StartEndsWhatAKilledKnotdLeft(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	agent := func(behaviour string, args string) string {
		return fmt.Sprintf("default_agent: fake\nagents:\n  fake:\n    command: [%q%s]\n    env: {%s: %s, %s: %q}\n",
			fakeagent.Program(t), args, fakeagent.EnvBehaviour, behaviour, fakeagent.EnvState, state)
	}
	writeFile(t, filepath.Join(c, "config.yaml"), agent(fakeagent.Stubborn, `, "hang"`))
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
	child, err := strconv.Atoi(string(b))
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait() // killed: its status says nothing
	require.True(t, processAlive(child), "the agent's child is gone with knotd: nothing left to end\n%s", out.String())

	// The next start (with an agent that answers: the change runs again).
	writeFile(t, filepath.Join(c, "config.yaml"), agent(fakeagent.Echo, ""))
	next, err := knotdProcess(t, "--once", v).CombinedOutput()
	require.NoError(t, err, "%s", next)
	testutil.WaitFor(t, waitTimeout, "the agent's child to be gone", func() bool { return !running(child) })
	require.Contains(t, string(next), "ended what an agent left running when knotd was killed while it ran")
}

// running reports whether the process pid runs (a zombie, which nothing
// may have reaped yet, does not).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
