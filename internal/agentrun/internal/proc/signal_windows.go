package proc

import (
	"os"
	"os/exec"
)

// setProcAttrs does nothing on Windows. knotd does not use job objects, so
// only the agent process itself is stopped (see interrupt); descendants it
// started may survive it. exec.Cmd.WaitDelay still makes sure a descendant
// holding the output pipes cannot block the run.
func setProcAttrs(*exec.Cmd) {}

// interrupt kills the agent process: Windows has no SIGTERM to send first.
func interrupt(p *os.Process) error { return p.Kill() }

// killGroup does nothing more on Windows: there is no process group to
// kill, and the agent itself has exited or been killed by then.
func killGroup(*os.Process) error { return nil }
