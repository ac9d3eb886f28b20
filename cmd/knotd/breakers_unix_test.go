//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/stretchr/testify/require"
)

// TestKnotd_BreakersPauseALoopAndAFailingNote: an agent that edits the
// note it answers loops; after breakers.runs runs within breakers.within
// the note is paused, with one section that says why and how to resume,
// and runs no more. A note whose runs keep failing is paused after
// breakers.failures failures in a row. knotd resume lets both run again.
func TestKnotd_BreakersPauseALoopAndAFailingNote(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: looper\nbreakers: {runs: 3, within: 1h, failures: 2}\nagents:\n"+
			"  looper:\n    command: [%q]\n    env: {%s: %s}\n"+
			"  gated:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, looper,
		fakeagent.Program(t), fakeagent.EnvBehaviour, gated, fakeagent.EnvState, state))
	writeFile(t, filepath.Join(state, "go-f.md"), "")
	writeFile(t, filepath.Join(state, "go-z.md"), "")
	cmd, _ := startWatching(t, "--debounce", "50ms", v)
	sections := func(note string) []tieoff.Section {
		p := filepath.Join(v, note[:len(note)-len(".md")]+".tieoff.md")
		if _, err := os.Stat(p); err != nil {
			return nil
		}
		return tieoffSections(t, p)
	}
	paused := func(note string) bool {
		_, st := status(t, v)
		for _, p := range st.Paused {
			if p.Note == note {
				return true
			}
		}
		return false
	}

	writeFile(t, filepath.Join(v, "loop.md"), "# Loop\n")
	testutil.WaitFor(t, waitTimeout, "loop.md to be paused", func() bool { return paused("loop.md") })
	writeFile(t, filepath.Join(v, "f.md"), "---\nknot_agent: gated\n---\n# F\n\nFAIL\n")
	testutil.WaitFor(t, waitTimeout, "f.md's first failure", func() bool { return len(sections("f.md")) == 1 })
	writeFile(t, filepath.Join(v, "f.md"), "---\nknot_agent: gated\n---\n# F\n\nFAIL, again\n")
	testutil.WaitFor(t, waitTimeout, "f.md to be paused", func() bool { return paused("f.md") })
	// A barrier: a note answered after both were paused.
	writeFile(t, filepath.Join(v, "z.md"), "---\nknot_agent: gated\n---\n# Z\n")
	testutil.WaitFor(t, waitTimeout, "the barrier", func() bool { return len(sections("z.md")) == 1 })

	loop := sections("loop.md")
	require.Len(t, loop, 5, "loop.md: 4 runs, then the section that says it is paused")
	last := loop[4]
	require.True(t, last.Paused, "a notice, not a failed run")
	require.False(t, last.Failed)
	require.Empty(t, last.RunID, "no run marker: no run, no transcript")
	require.Contains(t, last.Body, "knotd paused this note: it ran 4 times within 1h0m0s")
	require.Contains(t, last.Body, "knotd resume loop.md")
	fail := sections("f.md")
	require.Len(t, fail, 3, "f.md: 2 failed runs, then the section that says it is paused")
	require.Contains(t, fail[2].Body, "its last 2 runs failed")
	require.True(t, fail[2].Paused)
	require.Empty(t, fail[2].RunID)

	_, st := status(t, v)
	require.Len(t, st.Paused, 2)
	require.Contains(t, st.Paused[0].Why, "paused by knotd")

	// Resumed, the failing note (fixed) runs again.
	writeFile(t, filepath.Join(v, "f.md"), "---\nknot_agent: gated\n---\n# F\n\nfixed\n")
	out, err := knotdProcess(t, "resume", filepath.Join(v, "f.md")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	testutil.WaitFor(t, waitTimeout, "f.md's run after resume", func() bool { return len(sections("f.md")) == 4 })
	require.False(t, sections("f.md")[3].Failed)
	_, st = status(t, v)
	require.Equal(t, []string{"loop.md"}, notesOfStatus(st.Paused, func(p control.Paused) string { return p.Note }), "loop.md stays paused")

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait())
}
