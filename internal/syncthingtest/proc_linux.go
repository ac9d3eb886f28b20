package syncthingtest

import "syscall"

// setDeathSignal has the child sent SIGTERM when the test binary dies.
func setDeathSignal(a *syscall.SysProcAttr) {
	a.Pdeathsig = syscall.SIGTERM
}
