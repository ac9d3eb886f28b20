//go:build unix

package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnswer_RealDaemon: a watching knotd serves the questions and the
// answers on its socket: status lists the questions (none), and an answer
// to an id no question has reaches the vault through it and comes back
// as the command's exit 1, saying that none waits.
func TestAnswer_RealDaemon(t *testing.T) {
	v, _ := setup(t)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	if out, err := knotdProcess(t, "--once", v).CombinedOutput(); err != nil { // adopts
		t.Fatalf("knotd --once: %v\n%s", err, out)
	}
	startWatching(t, v)
	running, st := status(t, v)
	require.True(t, running)
	require.NotNil(t, st.Questions)
	require.Empty(t, st.Questions)

	out, err := knotdProcess(t, "deny", "3f9a2c1b", "--why", "no", v).CombinedOutput()
	require.Equal(t, exitFailed, exitStatus(t, err), "%s", out)
	require.Equal(t, "knotd deny: no question 3f9a2c1b waits (it was answered already, or there is none): no question waits\n", string(out))
}
