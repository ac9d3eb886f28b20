package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
)

// orphanAgent starts, as the leader of its own process group, a fake agent
// that starts a grandchild ignoring SIGTERM and ignores it itself, with
// run's id in its environment; it returns the agent, the grandchild's pid
// and the group as knotd records it.
func orphanAgent(t *testing.T, run string) (*exec.Cmd, int, Group) {
	t.Helper()
	state := t.TempDir()
	cmd := exec.Command(fakeagent.Program(t), "hang")
	cmd.Env = append(os.Environ(), RunIDEnv+"="+run)
	for k, v := range fakeagent.Env(fakeagent.Stubborn, state) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	pidFile := filepath.Join(state, fakeagent.GrandchildPIDFile)
	testutil.WaitFor(t, 30*time.Second, "the grandchild's pid file", func() bool { _, err := os.Stat(pidFile); return err == nil })
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	g, ok := groupOf(cmd.Process.Pid, run)
	if !ok {
		t.Fatal("groupOf: the agent's group cannot be recorded")
	}
	return cmd, child, g
}

// TestEndOrphans: what an agent left running is ended when its group is
// verified to be the recorded one (its leader, or a process with the run's
// id), and left alone when it is not: a process with the leader's pid but
// another start time (a reused pid), a group whose processes do not have
// the run's id, a group of another boot.
func TestEndOrphans(t *testing.T) {
	const grace = 200 * time.Millisecond
	tests := []struct {
		name       string
		killLeader bool                // the agent is gone (as knotd's death takes it), its child is not
		record     func(g Group) Group // what knotd recorded
		ended      bool
	}{
		{"the agent and its child", false, func(g Group) Group { return g }, true},
		{"the child of an agent that is gone", true, func(g Group) Group { return g }, true},
		{"the leader's pid, another start time", false, func(g Group) Group { g.Start--; return g }, false},
		{"the leader gone, another run", true, func(g Group) Group { g.Run = "another-run"; return g }, false},
		{"another boot", false, func(g Group) Group { g.Boot = "another-boot"; return g }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, child, g := orphanAgent(t, "run-"+strconv.Itoa(os.Getpid()))
			leader := cmd.Process.Pid
			if tt.killLeader {
				mustKill(t, leader)
				testutil.WaitFor(t, 30*time.Second, "the agent to be gone", func() bool { return !alive(leader) })
			}
			got := EndOrphans([]Group{tt.record(g)}, grace)
			if len(got) != 1 {
				t.Fatalf("EndOrphans = %+v; want one", got)
			}
			o := got[0]
			t.Logf("%+v", o)
			if o.Err != nil {
				t.Fatal(o.Err)
			}
			if !tt.ended {
				if o.Ended != 0 || !alive(child) || (!tt.killLeader && !alive(leader)) {
					t.Fatalf("EndOrphans = %+v, child alive %v: want the group left alone", o, alive(child))
				}
				return
			}
			want := 2
			if tt.killLeader {
				want = 1
			}
			// The child ignores SIGTERM before it writes its pid file: it
			// needs SIGKILL. The agent ignores SIGTERM only once it has
			// printed its reply, which may be after SIGTERM came.
			if o.Ended != want || o.Killed < 1 {
				t.Errorf("EndOrphans = %+v; want %d ended, the child by SIGKILL (it ignores SIGTERM)", o, want)
			}
			testutil.WaitFor(t, 30*time.Second, "the agent's child to be gone", func() bool { return !alive(child) })
		})
	}
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.state != 'Z'
}

func mustKill(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		line string
		want procStat
		ok   bool
	}{
		{"42 (sleep) S 1 42 42 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 123456 8192 100 18446744073709551615", procStat{state: 'S', pgrp: 42, start: 123456}, true},
		{"43 (a) b) (c) Z 1 40 40 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 7 8192 100", procStat{state: 'Z', pgrp: 40, start: 7}, true},
		{"44 (x) S 1 2", procStat{}, false},
		{"no parenthesis", procStat{}, false},
	}
	for _, tt := range tests {
		got, err := parseStat([]byte(tt.line))
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v (ok %v)", tt.line, got, err, tt.want, tt.ok)
		}
	}
}
