package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/stretchr/testify/require"
)

// TestOnce_Rules: rules by path choose the agent, the events and the
// agents a note may choose; a folder with mode off, and the notes
// Obsidian's Excluded files list, are never sent to any agent (no run, no
// section); a vault config's rule narrows, never widens.
func TestOnce_Rules(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	agent := func(name string) string {
		return fmt.Sprintf("  %s:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n", name, fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, state)
	}
	writeFile(t, filepath.Join(c, "config.yaml"), "default_agent: a1\nagents:\n"+agent("a1")+agent("a2")+`rules:
  - path: private/
    mode: off
  - path: journal/
    agent: a2
  - path: inbox/
    events: [created]
  - path: team/
    agents: [a1]
`)
	writeFile(t, filepath.Join(v, ".knot", "config.yaml"), "rules:\n  - path: shared/\n    mode: off\n")
	writeFile(t, filepath.Join(v, ".obsidian", "app.json"), `{"userIgnoreFilters": ["Archive/", "/\\.secret\\.md$/"]}`)
	if code, _, stderr := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("adopting: exit %d\n%s", code, stderr)
	}
	notes := map[string]string{
		"private/p.md":      "# P\n",
		"shared/s.md":       "# S\n",
		"Archive/x.md":      "# X\n",
		"notes/y.secret.md": "# Y\n",
		"journal/j.md":      "# J\n",
		"inbox/i.md":        "# I\n",
		"team/t.md":         "---\nknot_agent: a2\n---\n# T\n",
		"team/u.md":         "# U\n",
		"plain.md":          "# Plain\n",
	}
	for rel, content := range notes {
		writeFile(t, filepath.Join(v, filepath.FromSlash(rel)), content)
	}
	code, _, stderr := knotd(t, "--once", v)
	require.Equal(t, exitFailed, code, "team/t.md names an agent the rules do not allow: its run fails\n%s", stderr)
	require.Equal(t, map[string]string{"journal/j.md": "a2", "inbox/i.md": "a1", "plain.md": "a1", "team/t.md": "", "team/u.md": "a1"}, agentOfAllRuns(t, v))
	for _, rel := range []string{"private/p.md", "shared/s.md", "Archive/x.md", "notes/y.secret.md"} {
		_, err := os.Stat(filepath.Join(v, filepath.FromSlash(strings.TrimSuffix(rel, ".md")+".tieoff.md")))
		require.True(t, os.IsNotExist(err), "%s has a tie-off: it was sent to an agent or written to", rel)
	}
	secs := tieoffSections(t, filepath.Join(v, "team", "t.tieoff.md"))
	require.Len(t, secs, 1)
	require.True(t, secs[0].Failed)
	require.Contains(t, secs[0].Body, "allow only a1")

	// inbox/ runs on created only.
	writeFile(t, filepath.Join(v, "inbox", "i.md"), "# I\n\nedited\n")
	code, out, stderr := knotd(t, "--once", "--json", v)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, `"ran": 0`)
	require.Len(t, tieoffSections(t, filepath.Join(v, "inbox", "i.tieoff.md")), 1)
}

// agentOfAllRuns returns the agent of each note's runs, from knotd runs
// --json (a note with runs of two agents fails the test).
func agentOfAllRuns(t *testing.T, vault string) map[string]string {
	t.Helper()
	code, out, stderr := knotd(t, "runs", "--json", vault)
	require.Equal(t, exitOK, code, stderr)
	var runs []runJSON
	require.NoError(t, json.Unmarshal([]byte(out), &runs), out)
	got := map[string]string{}
	for _, r := range runs {
		if a, seen := got[r.Strand]; seen && a != r.Agent {
			t.Fatalf("%s ran with %s and %s", r.Strand, a, r.Agent)
		}
		got[r.Strand] = r.Agent
	}
	return got
}
