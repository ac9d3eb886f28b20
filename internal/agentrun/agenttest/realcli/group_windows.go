package realcli

import (
	"os"
	"os/exec"
)

// setGroup does nothing on Windows: there are no process groups to start
// the agent in (knotd's runner does not use job objects either), so only
// the agent itself is stopped; exec.Cmd.WaitDelay keeps a descendant that
// holds its pipes from blocking the test.
func setGroup(*exec.Cmd) {}

// killGroup has no group to kill on Windows.
func killGroup(int) error { return os.ErrProcessDone }

// liveGroup finds no group on Windows.
func liveGroup(int) ([]int, error) { return nil, nil }
