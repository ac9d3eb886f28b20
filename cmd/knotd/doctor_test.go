package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/doctor"
	"github.com/stretchr/testify/require"
)

// TestDoctor: knotd doctor through the real command: an untrusted vault
// config fails it (exit 1) and says to run knotd trust; once trusted, the
// vault's agent (a plain command) is found, not run for a version, and
// answers (--agents-answer), git is seen, and it exits 0.
func TestDoctor(t *testing.T) {
	v, _ := setup(t)
	state := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(v, ".git"), 0o755))
	writeFile(t, filepath.Join(v, ".knot", "config.yaml"), fmt.Sprintf(
		"default_agent: mine\nagents:\n  mine:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, state))

	code, out, stderr := knotd(t, "doctor", v)
	require.Equal(t, exitFailed, code, "%s\n%s", out, stderr)
	require.Contains(t, out, "fail  configuration:")
	require.Contains(t, out, "fix: read "+filepath.Join(v, ".knot", "config.yaml")+", then run: knotd trust "+v)

	code, _, stderr = knotd(t, "trust", v)
	require.Equal(t, exitOK, code, stderr)
	code, out, stderr = knotd(t, "doctor", "--agents-answer", "--json", v)
	require.Equal(t, exitOK, code, "%s\n%s", out, stderr)
	var fs []doctor.Finding
	require.NoError(t, json.Unmarshal([]byte(out), &fs), out)
	got := map[string]doctor.Status{}
	for _, f := range fs {
		got[f.Check] = f.Status
	}
	require.Equal(t, doctor.OK, got["configuration"])
	require.Equal(t, doctor.OK, got["agent mine answers"], "%s", out)
	require.Equal(t, doctor.OK, got["sync: git"])
	require.Equal(t, doctor.OK, got["state store"])
	require.Contains(t, got, "agent mine (the default)")
	calls, err := fakeagent.Calls(state)
	require.NoError(t, err)
	// A plain command is not run with --version (it would take it for a
	// prompt): only once, for --agents-answer.
	require.Len(t, calls, 1, "the agent ran once, for --agents-answer")
	require.Empty(t, calls[0].Args)
}
