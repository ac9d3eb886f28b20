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
	"github.com/knotd/knotd/agentrun/fakeagent"
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
	gateBehaviour: gateAgent,
}

func TestMain(m *testing.M) {
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
	// Record the call the way fakeagent's behaviours do: it reads stdin
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
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return die(err)
	}
	defer w.Close()
	if err := w.Add(inv.State); err != nil {
		return die(err)
	}
	release := gateRelease(inv.State, n)
	for {
		if _, err := os.Stat(release); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return die(err)
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			return die(err)
		}
	}
	fmt.Fprintf(inv.Stdout, "GATE %d\n", n)
	return 0
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
