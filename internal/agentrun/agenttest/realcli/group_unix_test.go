//go:build unix

package realcli

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
	"github.com/knotd/knotd/internal/agents/acp/acptest"
)

// The fake agents of these tests.
const (
	// lingering is the generic ACP agent (acptest.Fake) that first starts
	// lingeringChild, as claude-agent-acp starts the Claude Code CLI.
	lingering = "acp-lingering"
	// lingeringChild writes its pid to <state>/child.pid, then keeps
	// rewriting files in <cwd>/.lingering/ until that fails (its folder
	// is gone) or two minutes have passed; it holds none of the agent's
	// pipes, so it outlives the agent unnoticed.
	lingeringChild = "acp-lingering-child"
	childPIDFile   = "child.pid"
)

// TestMain lets the test binary be the fake agents.
func TestMain(m *testing.M) {
	fakeagent.Main(map[string]fakeagent.Behaviour{lingering: lingeringACP, lingeringChild: lingeringWriter})
	os.Exit(m.Run())
}

func lingeringACP(inv *fakekit.Invocation) int {
	exe, err := os.Executable()
	if err != nil {
		return inv.Die(err)
	}
	child := exec.Command(exe)
	child.Dir = inv.Dir
	child.Env = append(os.Environ(), fakeagent.EnvBehaviour+"="+lingeringChild)
	if err := child.Start(); err != nil {
		return inv.Die(err)
	}
	if err := fakekit.WaitFor(filepath.Join(inv.State, childPIDFile)); err != nil {
		return inv.Die(err)
	}
	return acptest.Fake(inv)
}

func lingeringWriter(inv *fakekit.Invocation) int {
	tmp := filepath.Join(inv.State, childPIDFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return inv.Die(err)
	}
	if err := os.Rename(tmp, filepath.Join(inv.State, childPIDFile)); err != nil {
		return inv.Die(err)
	}
	dir := filepath.Join(inv.Dir, ".lingering")
	for n, end := 0, time.Now().Add(2*time.Minute); time.Now().Before(end); n++ {
		// Mkdir, not MkdirAll: a removed vault is not made again.
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return 0
		}
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(n%8)), []byte("still here\n"), 0o644); err != nil {
			return 0
		}
		time.Sleep(2 * time.Millisecond) // the pace of its writes
	}
	return 0
}

// alive reports whether the process pid runs (a zombie does not).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return runtime.GOOS != "linux" // no /proc: signal 0 is all there is
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || len(b) < i+3 || b[i+2] != 'Z'
}

// TestStartACP_EndsTheGroup: an ACP agent whose child outlives it, writing
// into the vault (as the Claude Code CLI that claude-agent-acp starts
// did, failing TestClaudeACP_RealCLIVaultSettings when t.TempDir's cleanup
// found the vault's .claude not empty), leaves nothing running once Close
// returns, nor once the test that did not reach Close has ended; and the
// test's temporary folders are removed cleanly.
func TestStartACP_EndsTheGroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close bool
	}{
		{"closed", true},
		{"not closed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var child, group int
			ok := t.Run("agent", func(t *testing.T) {
				state, vault := t.TempDir(), t.TempDir()
				env := append(os.Environ(), fakeagent.EnvBehaviour+"="+lingering, fakeagent.EnvState+"="+state)
				c := StartACP(t, fakeagent.Program(t), nil, vault, env)
				c.Permit = func([]ACPOption) string { return "" }
				c.MustCall("initialize", ACPInit) // the child is running by now
				b, err := os.ReadFile(filepath.Join(state, childPIDFile))
				if err != nil {
					t.Fatal(err)
				}
				if child, err = strconv.Atoi(string(b)); err != nil {
					t.Fatal(err)
				}
				group = c.cmd.Process.Pid
				if !tc.close {
					return
				}
				c.Close()
				if c.exit != 0 {
					t.Errorf("the agent exited %d; want 0\n%s", c.exit, c.stderr.String())
				}
				if alive(child) {
					t.Errorf("the agent's child %d still runs after Close", child)
				}
				if left, err := liveGroup(group); err != nil || len(left) != 0 {
					t.Errorf("after Close the agent's group %d has %v (%v) running; want none", group, left, err)
				}
			})
			if !ok {
				t.Fatal("the agent's test failed (its temporary folders included)")
			}
			if child == 0 {
				t.Fatal("the agent's child was not seen")
			}
			if alive(child) {
				t.Errorf("the agent's child %d still runs after the test that started it ended", child)
			}
			if left, err := liveGroup(group); err != nil || len(left) != 0 {
				t.Errorf("after the test the agent's group %d has %v (%v) running; want none", group, left, err)
			}
		})
	}
}
