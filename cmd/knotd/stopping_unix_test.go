//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestKnotd_SaysWhatItWaitsForWhenStopping: on SIGINT knotd says it is
// stopping and how many running agents it waits for, and for how long.
func TestKnotd_SaysWhatItWaitsForWhenStopping(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: hang\nagents:\n  hang:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Hang, fakeagent.EnvState, state))
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	cmd := knotdProcess(t, "--debounce", "50ms", v)
	var errOut testutil.Buffer
	cmd.Stderr = &errOut
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	testutil.WaitFor(t, waitTimeout, "knotd to watch", func() bool { return strings.Contains(errOut.String(), `msg="watcher: watching"`) })
	writeFile(t, filepath.Join(v, "a.md"), "# A\n\nedited\n")
	testutil.WaitFor(t, waitTimeout, "the agent to start", func() bool {
		calls, err := fakeagent.Calls(state)
		return err == nil && len(calls) == 1 && strings.Contains(errOut.String(), `msg="run started"`)
	})
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	want := `msg="stopping: waiting for running agents to finish, then killing what remains (a second signal stops at once)" running_agents=1 up_to=10s`
	testutil.WaitFor(t, waitTimeout, "knotd to say it is stopping", func() bool { return strings.Contains(errOut.String(), want) })
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
}
