//go:build unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcAttrs starts the agent as the leader of a new process group, so
// that it and every descendant that stays in the group can be signalled
// together, and (on Linux) asks the kernel to kill it if knotd dies.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// interrupt asks the agent's whole process group to stop (SIGTERM). It is
// exec.Cmd.Cancel: it returns os.ErrProcessDone when the group is gone.
func interrupt(p *os.Process) error { return signalGroup(p, syscall.SIGTERM) }

// killGroup kills whatever is left of the agent's process group (SIGKILL).
// A group that is already gone is not an error.
func killGroup(p *os.Process) error {
	if err := signalGroup(p, syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func signalGroup(p *os.Process, sig syscall.Signal) error {
	// The agent leads its group, so the group id is its pid. The pid cannot
	// be reused while any process of the group is alive.
	err := syscall.Kill(-p.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
