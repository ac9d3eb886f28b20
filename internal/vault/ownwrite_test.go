package vault

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/watcher"
)

// TestWatch_OwnSessionWriteNotWaiting: knotd's own write of knot_session
// into a note, just before its run, is seen by the watcher while the run
// goes on; status must not show the note waiting "after its run in
// progress" for it (no run will come of it), and no second run happens.
// A save of the user's during the run still waits, and runs.
func TestWatch_OwnSessionWriteNotWaiting(t *testing.T) {
	e := newEnv(t)
	gate := filepath.Join(t.TempDir(), "gate")
	e.userConfig(fmt.Sprintf("write_session: true\ndefault_agent: fake\nagents:\n  fake:\n    command: [%q, \"--session={session}\"]\n    env: {%s: %q, %s: %q, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, e.state, fakeagent.EnvGate, gate))
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("note.md", "# Note\n")

	// knotd wrote the session, and the watcher reconciled that write,
	// while the agent still waits at its gate.
	testutil.WaitFor(t, waitTimeout, "knotd's knot_session write, reconciled during the run", func() bool {
		if !strings.Contains(e.read("note.md"), "knot_session:") {
			return false
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		n, last := 0, 0
		for i, b := range w.batches {
			if slices.ContainsFunc(b, func(h watcher.Hint) bool { return h.Path == "note.md" }) {
				n, last = n+1, i
			}
		}
		// The user's creation, then knotd's write; a new strand's change
		// is held back a moment (the other half of a move may come): a
		// turn of the loop that ended after that batch let it go.
		return n >= 2 && w.turns > w.atTurn[last] && w.waiting == 0
	})
	st, err := v.Control().Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Running) != 1 || len(st.Queued) != 0 {
		t.Errorf("status while the run goes on: running %+v, waiting %+v; want the run and nothing waiting", st.Running, st.Queued)
	}

	// A save of the user's during the run waits for it.
	e.write("note.md", e.read("note.md")+"\nmore\n")
	testutil.WaitFor(t, waitTimeout, "the user's save waiting after the run", func() bool {
		st, err := v.Control().Status(context.Background())
		return err == nil && len(st.Queued) == 1 && st.Queued[0].Note == "note.md" && st.Queued[0].FollowUp
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	w.settle()
	if runs := w.runs(); len(runs) != 2 {
		t.Errorf("runs %+v; want the first and the one for the user's save", runs)
	}
}
