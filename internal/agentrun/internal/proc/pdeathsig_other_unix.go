//go:build unix && !linux

package proc

import "syscall"

// setParentDeathSignal does nothing: only Linux has a parent-death signal.
// Elsewhere an agent outlives a knotd that is killed with SIGKILL; a knotd
// that stops normally still kills every agent's process group.
func setParentDeathSignal(*syscall.SysProcAttr) {}
