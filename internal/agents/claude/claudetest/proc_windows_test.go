//go:build windows

package claudetest

import "os/exec"

// killGroupOnCancel leaves cmd as it is: on Windows the context's
// cancellation kills the process itself.
func killGroupOnCancel(cmd *exec.Cmd) {}
