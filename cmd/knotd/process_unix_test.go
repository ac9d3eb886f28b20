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
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// startWatching starts knotd watching the vault as its own process and
// returns once it is watching. The returned channel gets the rest of its
// standard error when it exits.
func startWatching(t *testing.T, args ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := knotdProcess(t, args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
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
// second one, --once or watching, exits 3 and names the first one's pid
// (--once --dry-run, which only reads, works beside it: see
// TestDryRun_BesideTheRunningKnotd). SIGINT stops the first one cleanly:
// exit 0.
func TestKnotd_SecondInstanceExits3(t *testing.T) {
	v, _ := setup(t)
	first, rest := startWatching(t, "--debounce", "50ms", v)
	for _, args := range [][]string{{"--once", v}, {v}} {
		out, err := knotdProcess(t, args...).CombinedOutput()
		if code := exitStatus(t, err); code != exitLocked {
			t.Errorf("second knotd %q: exit %d; want %d\n%s", args, code, exitLocked, out)
		}
		if want := fmt.Sprintf("pid %d", first.Process.Pid); !strings.Contains(string(out), want) {
			t.Errorf("second knotd %q does not name the holder (%s):\n%s", args, want, out)
		}
	}
	require.NoError(t, first.Process.Signal(os.Interrupt))
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
	testutil.WaitFor(t, waitTimeout, "the agent to start", func() bool {
		calls, err := fakeagent.Calls(state)
		return err == nil && len(calls) == 1
	})
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var err error
	testutil.WaitFor(t, waitTimeout, "knotd to end", func() bool {
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

// TestKnotd_StartedInAFolderOfAVault: knotd started in a folder of a vault
// (one with .knot above it) is that vault's knotd: while another answers
// the vault it exits 3, naming it; two knotd never answer one note.
func TestKnotd_StartedInAFolderOfAVault(t *testing.T) {
	v, _ := setup(t)
	writeFile(t, filepath.Join(v, "projects", "deep", "a.md"), "# A\n")
	first, _ := startWatching(t, "--debounce", "50ms", v)
	for _, dir := range []string{filepath.Join(v, "projects"), filepath.Join(v, "projects", "deep")} {
		out, err := knotdProcess(t, "--once", dir).CombinedOutput()
		if code := exitStatus(t, err); code != exitLocked {
			t.Errorf("knotd --once %s: exit %d; want %d\n%s", dir, code, exitLocked, out)
		}
		if want := fmt.Sprintf("pid %d", first.Process.Pid); !strings.Contains(string(out), want) || !strings.Contains(string(out), "inside a vault") {
			t.Errorf("knotd in a folder of the vault does not say which vault and who holds it:\n%s", out)
		}
	}
}

// TestKnotd_HostileVaultFilesNeverBlock: a vault config that is a FIFO or
// a link to /dev/zero is refused at once (exit 2); ignore files that are
// FIFOs or links do not hold up a watching knotd, and SIGTERM stops it
// promptly.
func TestKnotd_HostileVaultFilesNeverBlock(t *testing.T) {
	for _, cfg := range []string{"fifo", "zero"} {
		v, _ := setup(t)
		p := filepath.Join(v, ".knot", "config.yaml")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if cfg == "fifo" {
			require.NoError(t, syscall.Mkfifo(p, 0o644))
		} else if err := os.Symlink("/dev/zero", p); err != nil {
			t.Fatal(err)
		}
		cmd := knotdProcess(t, "--once", v)
		out, err := runWithin(t, cmd, waitTimeout)
		if code := exitStatus(t, err); code != exitUsage || !strings.Contains(string(out), "config.yaml") {
			t.Errorf("knotd with a vault config that is a %s: exit %d; want %d naming the file\n%s", cfg, code, exitUsage, out)
		}
	}

	v, _ := setup(t)
	require.NoError(t, syscall.Mkfifo(filepath.Join(v, ".gitignore"), 0o644))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(v, ".knotignore")))
	writeFile(t, filepath.Join(v, "sub", "a.md"), "# A\n")
	require.NoError(t, syscall.Mkfifo(filepath.Join(v, "sub", ".ignore"), 0o644))
	cmd, rest := startWatching(t, "--debounce", "50ms", v)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if code := exitStatus(t, err); code != exitOK {
			t.Errorf("knotd after SIGTERM: exit %d; want 0\n%s", code, <-rest)
		}
	case <-time.After(waitTimeout):
		t.Fatal("knotd did not stop after SIGTERM")
	}
}

// runWithin runs cmd and returns its combined output, failing the test if
// it runs longer than d.
func runWithin(t *testing.T, cmd *exec.Cmd, d time.Duration) ([]byte, error) {
	t.Helper()
	var out testutil.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return []byte(out.String()), err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("knotd %q ran longer than %v:\n%s", cmd.Args, d, out.String())
		return nil, nil
	}
}
