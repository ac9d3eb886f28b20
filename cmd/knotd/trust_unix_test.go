//go:build unix

package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// TestTrust_ReachesTheRunningKnotd: knotd trust, while a knotd watches the
// vault, has it load its configuration again, says so, and the next change
// runs the agent the newly trusted vault config defines. With no knotd
// running it says the next one uses it.
func TestTrust_ReachesTheRunningKnotd(t *testing.T) {
	v, _ := setup(t)
	state := t.TempDir()
	if out, err := knotdProcess(t, "--once", v).CombinedOutput(); err != nil { // adopts
		t.Fatalf("knotd --once: %v\n%s", err, out)
	}
	cmd, _ := startWatching(t, "--debounce", "50ms", v)
	// The vault's config defines an agent: refused until trusted (the
	// running knotd notices the file, cannot load it, and goes on).
	writeFile(t, filepath.Join(v, ".knot", "config.yaml"), fmt.Sprintf(
		"default_agent: mine\nagents:\n  mine:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, state))
	// A change after it: the knotd looks at its config files before it
	// runs it, cannot load the vault's, and runs the digest.
	writeFile(t, filepath.Join(v, "b.md"), "# B\n")
	testutil.WaitFor(t, waitTimeout, "b.md answered by the digest", func() bool {
		return exists(filepath.Join(v, "b.tieoff.md"))
	})
	calls, err := fakeagent.Calls(state)
	require.NoError(t, err)
	require.Empty(t, calls, "the untrusted agent ran")

	out, err := knotdProcess(t, "trust", v).Output()
	require.NoError(t, err, "knotd trust")
	require.Regexp(t, regexp.MustCompile(fmt.Sprintf(`(?m)^the running knotd \(pid %d\) reloaded its configuration and now uses it$`, cmd.Process.Pid)), string(out))

	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	testutil.WaitFor(t, waitTimeout, "a.md answered by the trusted agent", func() bool {
		calls, err := fakeagent.Calls(state)
		return err == nil && len(calls) == 1
	})
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	code, out2, errOut := knotd(t, "trust", v)
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out2, "no knotd runs for this vault on this machine: the next one started uses it\n")
}
