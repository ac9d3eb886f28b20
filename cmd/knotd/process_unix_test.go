//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/knotd/knotd/agentrun/fakeagent"
)

// startWatching starts knotd watching the vault as its own process and
// returns once it is watching. The returned channel gets the rest of its
// standard error when it exits.
func startWatching(t *testing.T, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := knotdProcess(t, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // killed if still running: its status says nothing
	})
	r := bufio.NewReader(stderr)
	watching := make(chan bool, 1)
	rest := make(chan string, 1)
	go func() {
		var log strings.Builder
		said := false
		for {
			line, err := r.ReadString('\n')
			log.WriteString(line)
			if !said && strings.Contains(line, `msg="watcher: watching"`) {
				said = true
				watching <- true
			}
			if err != nil {
				if !said {
					watching <- false
				}
				rest <- log.String()
				return
			}
		}
	}()
	if !<-watching {
		t.Fatalf("knotd %q exited before watching:\n%s", args, <-rest)
	}
	return cmd, rest
}

// exitStatus returns the exit status of a finished command, -1 if a signal
// ended it.
func exitStatus(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("command did not run: %v", err)
	return 0
}

// TestKnotd_SecondInstanceExits3: while one knotd watches a vault, a
// second one, --once or watching, exits 3 and names the first one's pid.
// SIGINT stops the first one cleanly: exit 0.
func TestKnotd_SecondInstanceExits3(t *testing.T) {
	v, _ := setup(t)
	first, rest := startWatching(t, "--debounce", "50ms", v)
	for _, args := range [][]string{{"--once", v}, {v}, {"--once", "--dry-run", v}} {
		out, err := knotdProcess(t, args...).CombinedOutput()
		if code := exitStatus(t, err); code != exitLocked {
			t.Errorf("second knotd %q: exit %d; want %d\n%s", args, code, exitLocked, out)
		}
		if want := fmt.Sprintf("pid %d", first.Process.Pid); !strings.Contains(string(out), want) {
			t.Errorf("second knotd %q does not name the holder (%s):\n%s", args, want, out)
		}
	}
	if err := first.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := first.Wait()
	if code := exitStatus(t, err); code != exitOK {
		t.Errorf("knotd after SIGINT: exit %d; want 0\n%s", code, <-rest)
	}
	// The lock went with it.
	if out, err := knotdProcess(t, "--once", v).CombinedOutput(); exitStatus(t, err) != exitOK {
		t.Errorf("knotd after the first stopped: %v\n%s", err, out)
	}
}

// TestKnotd_SecondSignalStopsAtOnce: the first SIGINT waits for running
// agents (grace period); a second one ends knotd at once.
func TestKnotd_SecondSignalStopsAtOnce(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: hang\nagents:\n  hang:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Hang, fakeagent.EnvState, state))
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	cmd, _ := startWatching(t, "--debounce", "50ms", v)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n\nedited\n")
	waitFor(t, "the agent to start", func() bool {
		calls, err := fakeagent.Calls(state)
		return err == nil && len(calls) == 1
	})
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	waitFor(t, "knotd to end", func() bool {
		select {
		case err = <-exited:
			return true
		default:
			_ = cmd.Process.Signal(os.Interrupt) // the first asks, a later one insists
			return false
		}
	})
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("knotd ended with %v; want it killed by the second SIGINT, before the agent's grace period", err)
	}
}
