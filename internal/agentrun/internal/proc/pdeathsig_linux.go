package proc

import "syscall"

// setParentDeathSignal makes the kernel SIGKILL the agent if knotd dies
// without stopping it. Linux delivers the signal when the thread that
// started the agent exits; the Go runtime only ends threads whose goroutine
// locked them and exited, which knotd does not do. Descendants of the agent
// are not covered: they go when their parent does or when the group is
// killed.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
