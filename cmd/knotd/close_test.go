package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/statedir"
)

// blockRunning is a fake agent that answers, and first puts a non-empty
// directory where knotd's "running" marker of the vault is, so that knotd
// cannot remove the marker when it closes the vault.
const blockRunning = "block-running"

func blockRunningBehaviour(inv *fakeagent.Invocation) int {
	home, err := statedir.Home()
	if err == nil {
		var f statedir.Folder
		var ok bool
		f, ok, err = statedir.Find(home, os.Getenv(agentrun.EnvVault))
		if err == nil && !ok {
			err = fmt.Errorf("no state folder for %s", os.Getenv(agentrun.EnvVault))
		}
		if err == nil {
			if err = os.Remove(f.Running()); err == nil {
				err = os.MkdirAll(filepath.Join(f.Running(), "in-the-way"), 0o700)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(inv.Stderr, "block-running:", err)
		return 1
	}
	fmt.Fprintln(inv.Stdout, "answered")
	return 0
}

// TestRun_CloseErrorIsReported: an error closing the vault (here, the
// running marker cannot be removed) fails knotd --once with a message,
// rather than being dropped on the way out.
func TestRun_CloseErrorIsReported(t *testing.T) {
	v, configDir := setup(t)
	writeFile(t, filepath.Join(configDir, "config.yaml"), fmt.Sprintf(
		"default_agent: blocker\nagents:\n  blocker:\n    command: [%q]\n    env: {%s: %s}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, blockRunning))
	if code, _, stderr := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("first pass (adopting) = exit %d; want 0\n%s", code, stderr)
	}
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	code, _, stderr := knotd(t, "--once", v)
	if code == exitOK || !strings.Contains(stderr, "running") {
		t.Errorf("knotd --once whose vault cannot be closed cleanly = exit %d, stderr %q; want a failure naming the marker", code, stderr)
	}
}
