//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// status runs knotd status --json in vault and decodes it.
func status(t *testing.T, vault string) (running bool, st control.Status) {
	t.Helper()
	out, err := knotdProcess(t, "status", "--json", vault).Output()
	require.NoError(t, err, "knotd status")
	var got struct {
		Daemon bool `json:"daemon"`
		control.Status
	}
	require.NoError(t, json.Unmarshal(out, &got), "knotd status --json:\n%s", out)
	return got.Daemon, got.Status
}

func notesOfStatus[T any](xs []T, note func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, note(x))
	}
	return out
}

// TestKnotd_StatusAndControl drives a watching knotd through the real
// commands: status shows the run in progress and what waits; run answers
// an unchanged note; a failed run is listed and retried; a paused note's
// change waits, unrecorded, and runs when it is resumed. Then, with no
// daemon, the same commands work on their own.
func TestKnotd_StatusAndControl(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: gated\nagents:\n  gated:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, gated, fakeagent.EnvState, state))
	open := func(note string) { writeFile(t, filepath.Join(state, "go-"+note), "") }
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	writeFile(t, filepath.Join(v, "b.md"), "# B\n")
	writeFile(t, filepath.Join(v, "c.md"), "# C\n")
	if out, err := knotdProcess(t, "--once", v).CombinedOutput(); err != nil { // adopts
		t.Fatalf("knotd --once: %v\n%s", err, out)
	}
	if running, _ := status(t, v); running {
		t.Fatal("knotd status says a knotd runs before any was started")
	}

	cmd, _ := startWatching(t, "--debounce", "50ms", "--concurrency", "1", v)
	events := func(note string) []string {
		var evs []string
		p := filepath.Join(v, strings.TrimSuffix(note, ".md")+".tieoff.md")
		if _, err := os.Stat(p); err != nil {
			return nil
		}
		for _, s := range tieoffSections(t, p) {
			evs = append(evs, s.Event.String())
		}
		return evs
	}

	// A run in progress, and one waiting behind it.
	writeFile(t, filepath.Join(v, "a.md"), "# A\n\nFAIL\n")
	testutil.WaitFor(t, waitTimeout, "a.md's run to start", func() bool {
		_, st := status(t, v)
		return len(st.Running) == 1 && st.Running[0].Note == "a.md"
	})
	out, err := knotdProcess(t, "run", filepath.Join(v, "b.md")).CombinedOutput()
	require.NoError(t, err, "knotd run:\n%s", out)
	require.Contains(t, string(out), "queued b.md")
	running, st := status(t, v)
	require.True(t, running)
	require.True(t, st.Answering, "status: %+v", st)
	require.Equal(t, cmd.Process.Pid, st.PID)
	// (a.md may wait behind its own run too: the watcher can see its
	// save as two changes, and the second one waits.)
	queued := slices.DeleteFunc(st.Queued, func(q control.Queued) bool { return q.FollowUp && q.Note == "a.md" })
	require.Equal(t, []control.Queued{{Note: "b.md", FiredBy: "user"}}, queued)
	text, err := knotdProcess(t, "status", v).CombinedOutput()
	require.NoError(t, err)
	for _, want := range []string{"knotd answers " + v, "running (1):", "a.md", "waiting (", "b.md", "(user)", "today (UTC):"} {
		require.Contains(t, string(text), want)
	}

	// a.md fails; b.md (unchanged, run by hand) is answered.
	open("a.md")
	open("b.md")
	testutil.WaitFor(t, waitTimeout, "both runs", func() bool {
		return slices.Equal(events("a.md"), []string{"Modified"}) && slices.Equal(events("b.md"), []string{"Modified"})
	})
	testutil.WaitFor(t, waitTimeout, "the failure in status", func() bool {
		_, st = status(t, v)
		return len(st.Failures) == 1 && len(st.Running) == 0
	})
	require.Equal(t, "a.md", st.Failures[0].Note)
	require.Contains(t, st.Failures[0].Reason, "exit")
	require.Equal(t, control.Totals{Runs: 2, OK: 1, Failed: 1}, st.Today)

	// Retry: a.md runs again (and fails again: it still says FAIL).
	out, err = knotdProcess(t, "retry", v).CombinedOutput()
	require.NoError(t, err, "knotd retry:\n%s", out)
	require.Contains(t, string(out), "queued a.md")
	testutil.WaitFor(t, waitTimeout, "a.md's retry", func() bool { return len(events("a.md")) == 2 })

	// Pause c.md: its change waits; resume runs it.
	out, err = knotdProcess(t, "pause", "--why", "on holiday", filepath.Join(v, "c.md")).CombinedOutput()
	require.NoError(t, err, "knotd pause:\n%s", out)
	writeFile(t, filepath.Join(v, "c.md"), "# C\n\nchanged while paused\n")
	open("c.md")
	writeFile(t, filepath.Join(v, "zz.md"), "# Z\n") // a barrier: changed after c.md, answered after it
	open("zz.md")
	testutil.WaitFor(t, waitTimeout, "the barrier's run", func() bool { return len(events("zz.md")) == 1 })
	require.Empty(t, events("c.md"), "a paused note ran")
	_, st = status(t, v)
	require.Equal(t, []control.Paused{{Note: "c.md", Since: st.Paused[0].Since, Why: "on holiday"}}, st.Paused)
	out, err = knotdProcess(t, "resume", "--vault", v).CombinedOutput()
	require.NoError(t, err, "knotd resume:\n%s", out)
	require.Contains(t, string(out), "resumed c.md")
	testutil.WaitFor(t, waitTimeout, "c.md's run after resume", func() bool { return slices.Equal(events("c.md"), []string{"Modified"}) })

	// Refused: a file that is not a note.
	writeFile(t, filepath.Join(v, "x.txt"), "x")
	out, err = knotdProcess(t, "run", filepath.Join(v, "x.txt")).CombinedOutput()
	require.Error(t, err, "knotd run of a text file succeeded:\n%s", out)
	require.Contains(t, string(out), "not a note")

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait())

	// On their own: pause, then run by hand (paused or not), status.
	out, err = knotdProcess(t, "pause", filepath.Join(v, "b.md")).CombinedOutput()
	require.NoError(t, err, "knotd pause on its own:\n%s", out)
	open("b.md")
	out, err = knotdProcess(t, "run", filepath.Join(v, "b.md")).CombinedOutput()
	require.NoError(t, err, "knotd run on its own:\n%s", out)
	require.Contains(t, string(out), "Modified b.md: ok")
	require.Equal(t, []string{"Modified", "Modified"}, events("b.md"))
	running, st = status(t, v)
	require.False(t, running)
	require.Equal(t, []string{"b.md"}, notesOfStatus(st.Paused, func(p control.Paused) string { return p.Note }))
	require.Equal(t, []string{"a.md"}, notesOfStatus(st.Failures, func(f control.Failure) string { return f.Note }), "a.md still says FAIL")
	out, err = knotdProcess(t, "resume", filepath.Join(v, "b.md")).CombinedOutput()
	require.NoError(t, err, "knotd resume on its own:\n%s", out)
	_, st = status(t, v)
	require.Empty(t, st.Paused)
}
