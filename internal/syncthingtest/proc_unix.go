//go:build unix

package syncthingtest

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr puts cmd's process into a process group of its own, so that
// stopping it reaches whatever it starts too (a $KNOT_SYNCTHING_BIN may be
// a wrapper script), and, where the system can, has it sent SIGTERM when
// the test binary dies without its cleanups (a go test timeout).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// terminate asks p's process group to exit.
func terminate(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGTERM)
}

// kill kills p's process group.
func kill(p *os.Process) error {
	return syscall.Kill(-p.Pid, syscall.SIGKILL)
}
