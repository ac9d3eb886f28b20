//go:build !unix

package syncthingtest

import (
	"os"
	"os/exec"
)

// setProcAttr does nothing here.
func setProcAttr(*exec.Cmd) {}

// terminate kills p: there is no SIGTERM to send.
func terminate(p *os.Process) error {
	return p.Kill()
}

// kill kills p.
func kill(p *os.Process) error {
	return p.Kill()
}
