//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/vault"
	"github.com/stretchr/testify/require"
)

// TestDryRun_BesideTheRunningKnotd: --once --dry-run only reads, so it
// works while a knotd watches the vault (it reads a copy of that knotd's
// state), shows what would run, and leaves no copy behind; the running
// knotd goes on.
func TestDryRun_BesideTheRunningKnotd(t *testing.T) {
	v, _ := setup(t)
	if out, err := knotdProcess(t, "--once", v).CombinedOutput(); err != nil { // adopts
		t.Fatalf("knotd --once: %v\n%s", err, out)
	}
	// A long quiet period: the change waits in the running knotd.
	cmd, _ := startWatching(t, "--debounce", "1m", "--max-wait", "1m", v)
	writeFile(t, filepath.Join(v, "n.md"), "# N\n\nwhat would run\n")

	out, err := knotdProcess(t, "--once", "--dry-run", v).CombinedOutput()
	require.NoError(t, err, "knotd --once --dry-run beside a running knotd:\n%s", out)
	require.Contains(t, string(out), fmt.Sprintf("knotd (pid %d) is running on this vault: this dry run reads a copy of its state", cmd.Process.Pid))
	require.Contains(t, string(out), "==> Created n.md (agent digest)\n## Event Context\n")
	require.Contains(t, string(out), "what would run")

	dir, ok, err := vault.RunsDir("", v)
	require.NoError(t, err)
	require.True(t, ok)
	entries, err := os.ReadDir(filepath.Dir(dir))
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.Contains(e.Name(), "dry-run"), "a copy of the state was left: %s", e.Name())
	}
	_, err = os.Stat(filepath.Join(v, "n.tieoff.md"))
	require.ErrorIs(t, err, os.ErrNotExist, "the dry run wrote a tie-off")
	require.Nil(t, cmd.ProcessState, "the running knotd stopped")
}
