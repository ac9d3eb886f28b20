//go:build unix

package realcli

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setGroup starts cmd as the leader of a new process group, as knotd's
// runner starts agents (agentrun's setProcAttrs), and makes the end of its
// context kill the whole group: an adapter's descendants (the Claude Code
// CLI that claude-agent-acp starts, codex app-server) stay in the group,
// so that endGroup can stop them too.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
}

// killGroup kills every process of the group pgid (SIGKILL). A group that
// is already gone is os.ErrProcessDone.
func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
