package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/knotd/knotd/internal/vault"
	"github.com/stretchr/testify/require"
)

// TestFollowOnce_WaitsForLinesBeingWritten: knotd runs -f does not print
// a run whose transcript it catches before its first line is whole (the
// run is starting) or in the middle of a line: it prints the run once the
// line is whole. A transcript left so for longer than followSettle (a
// crash) is shown as it is.
func TestFollowOnce_WaitsForLinesBeingWritten(t *testing.T) {
	v, runA, _ := runsVault(t)
	dir, found, err := vault.RunsDir("", v)
	require.NoError(t, err)
	require.True(t, found)
	b, err := os.ReadFile(transcript.Path(dir, runA))
	require.NoError(t, err)
	started, _, ok := strings.Cut(string(b), "\n")
	require.True(t, ok, "run a's transcript has no whole line")

	o := runsOptions{jsonOut: true, limit: 10}
	var out bytes.Buffer
	seen, last := map[string]string{}, []dirEntryStamp(nil)
	require.NoError(t, followOnce(v, &o, &out, seen, &last, true))
	require.Equal(t, 2, strings.Count(out.String(), "\n"), "the first look: %s", out.String())

	newRun := func() string {
		id, err := uuid.NewV7()
		require.NoError(t, err)
		return id.String()
	}
	look := func() string {
		t.Helper()
		out.Reset()
		require.NoError(t, followOnce(v, &o, &out, seen, &last, false))
		return out.String()
	}

	starting := newRun()
	p := transcript.Path(dir, starting)
	for _, step := range []struct {
		name, content, want string // want: "" for nothing printed
	}{
		{"created, no line yet", "", ""},
		{"half its first line", started[:len(started)/2], ""},
		{"its first line whole", started + "\n", `"finished":false`},
	} {
		require.NoError(t, os.WriteFile(p, []byte(step.content), 0o600))
		got := look()
		switch {
		case step.want == "" && got != "":
			t.Errorf("%s: printed %q; want nothing yet", step.name, got)
		case step.want != "" && (strings.Count(got, "\n") != 1 || !strings.Contains(got, step.want) || !strings.Contains(got, starting) || strings.Contains(got, "problem")):
			t.Errorf("%s: printed %q; want one line of run %s with %s", step.name, got, starting, step.want)
		}
	}

	crashed := newRun()
	p = transcript.Path(dir, crashed)
	require.NoError(t, os.WriteFile(p, nil, 0o600))
	if got := look(); got != "" {
		t.Errorf("an empty new transcript: printed %q; want nothing yet", got)
	}
	old := time.Now().Add(-2 * followSettle)
	require.NoError(t, os.Chtimes(p, old, old))
	if got := look(); !strings.Contains(got, crashed) || !strings.Contains(got, `"problem":"no whole line"`) {
		t.Errorf("a transcript left empty: printed %q; want run %s shown with its problem", got, crashed)
	}
}
