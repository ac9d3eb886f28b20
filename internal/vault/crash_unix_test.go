//go:build unix

package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/question"
	"github.com/stretchr/testify/require"
)

// The crash points of a run, in the order a run passes them. The crash
// helper SIGKILLs itself at the one named by crashAtEnv.
const (
	crashAgentRunning  = "agent-running"   // the agent is still running (it kills knotd)
	crashReplyReceived = "reply-received"  // the agent replied; nothing is journaled
	crashJournaled     = "journaled"       // the reply is journaled; the tie-off is untouched
	crashAppended      = "tieoff-appended" // the section is in the tie-off; the record is not
	crashCommitted     = "state-committed" // the record is committed
)

const (
	crashAtEnv     = "KNOTD_VAULT_TEST_CRASH_AT"
	crashRootEnv   = "KNOTD_VAULT_TEST_ROOT"
	crashConfigEnv = "KNOTD_VAULT_TEST_CONFIG"
	crashHomeEnv   = "KNOTD_VAULT_TEST_HOME"
)

// killParentBehaviour is a fake agent that SIGKILLs the knotd that runs
// it, the first time only (it leaves a marker in its state directory),
// then replies as the Echo fake does: knotd dies while its agent runs.
const killParentBehaviour = "kill-parent"

func init() {
	helpers["crash"] = helperCrash
	fakes[killParentBehaviour] = killParentAgent
}

func killParentAgent(inv *fakeagent.Invocation) int {
	marker := filepath.Join(inv.State, "killed-parent")
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			fmt.Fprintln(inv.Stderr, "kill-parent:", err)
			return 125
		}
		if err := syscall.Kill(os.Getppid(), syscall.SIGKILL); err != nil {
			fmt.Fprintln(inv.Stderr, "kill-parent:", err)
			return 125
		}
	case !errors.Is(err, fs.ErrExist):
		fmt.Fprintln(inv.Stderr, "kill-parent:", err)
		return 125
	}
	return fakeagent.Behaviours()[fakeagent.Echo](inv)
}

// helperCrash is knotd --once on the vault crashRootEnv with the user
// config directory crashConfigEnv, killed with SIGKILL at the point
// crashAtEnv names (none: it runs to the end and exits 0).
func helperCrash() int {
	die := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		for {
			time.Sleep(time.Hour) // the signal is on its way (select {} could be reported as a deadlock first)
		}
	}
	v, err := Open(os.Getenv(crashRootEnv), Options{ConfigDir: os.Getenv(crashConfigEnv), StateHome: os.Getenv(crashHomeEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 1
	}
	switch at := os.Getenv(crashAtEnv); at {
	case "", crashAgentRunning:
	case crashReplyReceived:
		v.agent = crashingAgent{inner: v.runAgent(), die: die}
	case crashJournaled:
		probeOf(v).journaledFn = func(string) { die() }
	case crashAppended:
		probeOf(v).completingFn = func(string) error { die(); return nil }
	case crashCommitted:
		probeOf(v).completedFn = func(string) { die() }
	default:
		fmt.Fprintf(os.Stderr, "crash helper: unknown point %q\n", at)
		return 2
	}
	sum, err := v.Once(context.Background(), OnceOptions{})
	if cerr := v.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 1
	}
	fmt.Printf("ran %d failed %d\n", sum.Ran, sum.Failed)
	return 0
}

// crashingAgent dies as soon as its agent has replied.
type crashingAgent struct {
	inner AgentRunner
	die   func()
}

func (a crashingAgent) Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error) {
	res, err := a.inner.Run(ctx, req)
	if err == nil && res.Outcome == agentrun.OutcomeOK {
		a.die()
	}
	return res, err
}

// crashChild runs the crash helper on e's vault, stopping at point, and
// returns its state once it ended.
func (e *env) crashChild(point string) (*os.ProcessState, string) {
	e.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=crash", crashAtEnv+"="+point,
		crashRootEnv+"="+e.root, crashConfigEnv+"="+e.configDir, crashHomeEnv+"="+e.home)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		e.t.Fatalf("crash helper: %v", err)
	}
	return cmd.ProcessState, out.String()
}

// TestCrash_AtEveryStepOfARun kills knotd --once with SIGKILL at each step
// of a run, starts it again, and checks invariant 3 of docs/design.md#invariants: the
// tie-offs are whole sections, no reply is appended twice, no change is
// lost and the state is consistent.
func TestCrash_AtEveryStepOfARun(t *testing.T) {
	for _, point := range []string{crashAgentRunning, crashReplyReceived, crashJournaled, crashAppended, crashCommitted} {
		t.Run(point, func(t *testing.T) {
			e := newEnv(t)
			behaviour := fakeagent.Echo
			if point == crashAgentRunning {
				behaviour = killParentBehaviour
			}
			e.useAgent("", behaviour)
			e.write("old.md", "# Old\n")
			e.onceFresh() // first contact: adopted
			e.write("old.md", "# Old, edited\n")
			e.write("new.md", "# New\n")
			e.write("dir/deep.md", "# Deep\n")
			changed := []string{"old.md", "new.md", "dir/deep.md"}

			st, out := e.crashChild(point)
			ws, ok := st.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the helper was not killed at %s: %v\n%s", point, st, out)
			}
			st, out = e.crashChild("")
			if !st.Success() {
				t.Fatalf("restart: %v\n%s", st, out)
			}
			e.assertWhole(changed)
		})
	}
}

// TestCrash_Repeatedly kills knotd at the same step on every start until
// the changes are done: each start finishes the run a crash left behind
// before it dies in the next one.
func TestCrash_Repeatedly(t *testing.T) {
	for _, point := range []string{crashJournaled, crashAppended} {
		t.Run(point, func(t *testing.T) {
			e := newEnv(t)
			e.useAgent("", fakeagent.Echo)
			e.onceFresh()
			changed := []string{"a.md", "b.md", "c.md"}
			for _, rel := range changed {
				e.write(rel, "# "+rel+"\n")
			}
			for i := 0; ; i++ {
				if i > 2*len(changed) {
					t.Fatal("the crashes never stopped: no progress")
				}
				st, out := e.crashChild(point)
				if st.Success() {
					break
				}
				if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
					t.Fatalf("start %d: %v\n%s", i, st, out)
				}
			}
			e.assertWhole(changed)
		})
	}
}

// TestCrash_Questions kills knotd at each step after a run that held a
// call (the claude preset at permissions ask, the Claude fake) and after
// the run that continues it once approved: the question is asked once
// (not lost with a run whose journal held it, not written twice), and the
// approved turn goes on once (the journal entry of its run ends the
// question in the same transaction): the approved call runs once.
func TestCrash_Questions(t *testing.T) {
	for _, point := range []string{crashJournaled, crashAppended, crashCommitted} {
		t.Run(point, func(t *testing.T) {
			e := newEnv(t)
			e.userConfig("default_agent: claude\nagents:\n" + e.fakeAgentYAML("claude", "claude", fakeagent.Claude) + "    permissions: ask\n")
			e.onceFresh()
			e.write("n.md", "Please write it.\n\n"+claudetest.FakeTool+"Write made.txt hello\n")
			killedThenDone := func(what string) {
				t.Helper()
				st, out := e.crashChild(point)
				if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("%s: the helper was not killed at %s: %v\n%s", what, point, st, out)
				}
				if st, out = e.crashChild(""); !st.Success() {
					t.Fatalf("%s: restart: %v\n%s", what, st, out)
				}
			}
			killedThenDone("the asking run")
			a := &askEnv{env: e}
			require.Equal(t, []string{"question"}, a.kinds(), "the question is written once")
			v := e.open()
			qs, err := v.Questions()
			mustDo(t, err)
			require.Len(t, qs, 1, "the question is recorded")
			_, err = v.AnswerQuestion(qs[0].ID, question.Approve, "", question.FromCommand)
			mustDo(t, err)
			e.close(v)
			require.False(t, e.exists("made.txt"))

			killedThenDone("the continuing run")
			require.Equal(t, "hello", e.read("made.txt"))
			require.Len(t, e.calls(), 2, "the asking turn, and the turn that went on once")
			require.Equal(t, []string{"question", "approve", "run"}, a.kinds())
			v = e.open()
			qs, err = v.Questions()
			mustDo(t, err)
			require.Empty(t, qs)
			e.close(v)
		})
	}
}
