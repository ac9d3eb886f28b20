package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/fsnotify/fsnotify"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/agents/claude/hook"
)

// helperEnv names the environment variable that turns the test binary
// into one of the helper processes below (the os/exec test pattern).
const helperEnv = "KNOTD_VAULT_TEST_HELPER"

// helpers are the programs the test binary can impersonate, by name.
var helpers = map[string]func() int{
	"holdlock": helperHoldLock,
}

// fakes are the fake agents of these tests, added to fakeagent's own.
var fakes = map[string]fakeagent.Behaviour{
	gateBehaviour:       gateAgent,
	claudeGateBehaviour: claudeGateAgent,
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "hook" {
		// knotd's own hook, as `knotd hook ARGS…` (the hook the claude
		// preset at permissions ask runs when Request.Hook is empty).
		if err := hook.Main(os.Args[2:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "knotd hook:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	fakeagent.Main(fakes)
	if name := os.Getenv(helperEnv); name != "" {
		h, ok := helpers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown helper %q\n", name)
			os.Exit(2)
		}
		os.Exit(h())
	}
	os.Exit(m.Run())
}

// gateBehaviour is a fake agent that records its call (the Nth, counting
// from 1), then blocks until the file release-N appears in its state
// directory, then replies "GATE N" and the first line of its prompt's
// strand content. Tests use it to hold a run open while they edit.
const gateBehaviour = "gate"

// gateRelease is the file that lets call n of the gate agent finish.
func gateRelease(state string, n int) string {
	return filepath.Join(state, "release-"+strconv.Itoa(n))
}

func gateAgent(inv *fakeagent.Invocation) int {
	die := func(err error) int {
		fmt.Fprintln(inv.Stderr, "gate:", err)
		return 125
	}
	// state.Record the call the way fakeagent's behaviours do: it reads stdin
	// and appends to calls.jsonl (the Echo behaviour does nothing else
	// before replying, so run it with a discarded reply).
	echo := fakeagent.Behaviours()[fakeagent.Echo]
	if code := echo(&fakeagent.Invocation{Name: gateBehaviour, Args: inv.Args, Stdin: inv.Stdin,
		Stdout: discard{}, Stderr: inv.Stderr, State: inv.State, Dir: inv.Dir}); code != 0 {
		return code
	}
	calls, err := fakeagent.Calls(inv.State)
	if err != nil {
		return die(err)
	}
	n := len(calls)
	if err := waitFile(inv.State, gateRelease(inv.State, n)); err != nil {
		return die(err)
	}
	fmt.Fprintf(inv.Stdout, "GATE %d\n", n)
	return 0
}

// claudeGateBehaviour is the fake Claude Code CLI behind a gate: call N
// (counting calls made so far) creates started-N in the state directory,
// waits for release-N, then behaves as fakeagent's claude (which records
// the call).
const claudeGateBehaviour = "claude-gate"

// gateStarted is the file call n of the claude-gate agent creates when it
// starts waiting.
func gateStarted(state string, n int) string {
	return filepath.Join(state, "started-"+strconv.Itoa(n))
}

func claudeGateAgent(inv *fakeagent.Invocation) int {
	calls, err := fakeagent.Calls(inv.State)
	if err == nil {
		err = os.WriteFile(gateStarted(inv.State, len(calls)+1), nil, 0o600)
	}
	if err == nil {
		err = waitFile(inv.State, gateRelease(inv.State, len(calls)+1))
	}
	if err != nil {
		fmt.Fprintln(inv.Stderr, "claude-gate:", err)
		return 125
	}
	return fakeagent.Behaviours()[fakeagent.Claude](inv)
}

// waitFile blocks until the file path, in the directory dir, exists.
func waitFile(dir, path string) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return err
	}
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			return err
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
