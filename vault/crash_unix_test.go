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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/agentrun/fakeagent"
	"github.com/knotd/knotd/strand"
	"github.com/knotd/knotd/tieoff"
	"github.com/knotd/knotd/transcript"
	"github.com/knotd/knotd/watcher"
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
	v, err := Open(os.Getenv(crashRootEnv), Options{ConfigDir: os.Getenv(crashConfigEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash helper:", err)
		return 1
	}
	switch at := os.Getenv(crashAtEnv); at {
	case "", crashAgentRunning:
	case crashReplyReceived:
		v.agent = crashingAgent{inner: v.agent, die: die}
	case crashJournaled:
		v.store.hooks.journaled = func(string) { die() }
	case crashAppended:
		v.store.hooks.completing = func(string) error { die(); return nil }
	case crashCommitted:
		v.store.hooks.completed = func(string) { die() }
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
	inner Agent
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
		crashRootEnv+"="+e.root, crashConfigEnv+"="+e.configDir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		e.t.Fatalf("crash helper: %v", err)
	}
	return cmd.ProcessState, out.String()
}

// assertWhole checks the vault after a crash and a restart: every tie-off
// is whole sections, no run's section appears twice, every section's run
// has a readable transcript that records the section, every changed strand
// has exactly one section, no run is left journaled and a further pass
// finds nothing to do.
func (e *env) assertWhole(changed []string) {
	e.t.Helper()
	runs := map[string]string{}
	err := filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, strand.TieOffExt) {
			return err
		}
		secs, perrs, err := tieoff.Read(p)
		if err != nil {
			return err
		}
		if len(perrs) > 0 {
			e.t.Errorf("%s does not parse: %v", p, perrs)
		}
		for _, s := range secs {
			if s.Torn {
				e.t.Errorf("%s: torn section of run %s", p, s.RunID)
			}
			if prev, dup := runs[s.RunID]; dup {
				e.t.Errorf("run %s appears twice (%s and %s)", s.RunID, prev, p)
			}
			runs[s.RunID] = p
		}
		return nil
	})
	mustDo(e.t, err)
	// Every run in a tie-off has a whole transcript that says so.
	for id := range runs {
		evs, warns, err := transcript.ReadRun(RunsDir(e.root), id)
		switch {
		case err != nil:
			e.t.Errorf("transcript of run %s: %v", id, err)
		case len(warns) > 0:
			e.t.Errorf("transcript of run %s: %v", id, warns)
		case !slices.ContainsFunc(evs, func(ev transcript.Event) bool { return ev.Type == transcript.TieOffAppended }):
			e.t.Errorf("transcript of run %s does not record its tie-off section", id)
		}
	}
	for _, rel := range changed {
		if secs := e.sections(rel); len(secs) != 1 || secs[0].Failed {
			e.t.Errorf("%s: %d sections %v; want one successful section", rel, len(secs), e.events(rel))
		}
	}
	v := e.open()
	ps, err := v.store.Pendings()
	mustDo(e.t, err)
	if len(ps) != 0 {
		e.t.Errorf("%d runs are still journaled after a restart", len(ps))
	}
	pending, err := v.reconcile([]watcher.Hint{{Dir: true}})
	mustDo(e.t, err)
	if len(pending) != 0 {
		e.t.Errorf("reconcile after a restart finds %v pending", pending)
	}
	if sum := e.once(v, false); sum.Ran != 0 {
		e.t.Errorf("a pass after the restart ran again: %+v", sum.Runs)
	}
	e.close(v)
}

// TestCrash_AtEveryStepOfARun kills knotd --once with SIGKILL at each step
// of a run, starts it again, and checks the invariants of DESIGN §8.3: the
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
