//go:build unix

package agentrun

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
)

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || !isLinux()
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

func isLinux() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// TestRunner_KillsStubbornAgent runs an agent that starts a grandchild
// which ignores SIGTERM and keeps the agent's standard output open. Whether
// the agent exits or is canceled, the run must return about one grace
// period later and the grandchild must be gone.
func TestRunner_KillsStubbornAgent(t *testing.T) {
	const grace = 300 * time.Millisecond
	for _, mode := range []string{"exit", "hang"} {
		t.Run(mode, func(t *testing.T) {
			agent, state := fakeCommand(t, fakeagent.Stubborn, mode)
			req := runRequest(t, agent, planV1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan Result, 1)
			go func() {
				res, err := (&Runner{Grace: grace}).Run(ctx, req)
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()

			pidFile := filepath.Join(state, fakeagent.GrandchildPIDFile)
			testutil.WaitFor(t, 30*time.Second, "the grandchild's pid file", func() bool { _, err := os.Stat(pidFile); return err == nil })
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if mode == "hang" {
				cancel()
			}
			res := <-done
			elapsed := time.Since(start)
			t.Logf("%s: Run returned %v after the grandchild was up (grace %v)", mode, elapsed, grace)

			switch mode {
			case "exit":
				if res.Outcome != OutcomeOK || res.Reply != "STUBBORN REPLY" {
					t.Errorf("Run = %s %q reply %q; want ok", res.Outcome, res.Reason, res.Reply)
				}
				if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "left behind") }) {
					t.Errorf("notes %q do not mention the process left behind", res.Notes)
				}
			case "hang":
				if res.Outcome != OutcomeCanceled {
					t.Errorf("Run = %s %q; want canceled", res.Outcome, res.Reason)
				}
			}
			// A loose bound: the point is that Run returns at all (the
			// grandchild would hold the pipe forever), measured above.
			if elapsed > grace+20*time.Second {
				t.Errorf("Run took %v after cancellation; want about the grace period %v", elapsed, grace)
			}
			testutil.WaitFor(t, 30*time.Second, "the grandchild to be gone", func() bool { return !alive(pid) })
		})
	}
}
