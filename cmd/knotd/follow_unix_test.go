//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/stretchr/testify/require"
)

// TestRuns_Follow: knotd runs -f, a process of its own, lists the newest
// runs (--limit), oldest first, then prints each run as it appears and
// ends, until SIGINT stops it: exit status 0. It follows a vault that has
// no runs folder yet too.
func TestRuns_Follow(t *testing.T) {
	v, runA, runB := runsVault(t)
	fresh, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)

	follow := func(args ...string) (stop func() string, out, errOut *testutil.Buffer) {
		cmd := knotdProcess(t, append([]string{"runs"}, args...)...)
		out, errOut = &testutil.Buffer{}, &testutil.Buffer{}
		cmd.Stdout, cmd.Stderr = out, errOut
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return func() string {
			require.NoError(t, cmd.Process.Signal(os.Interrupt))
			if code := exitStatus(t, <-done); code != exitOK {
				t.Errorf("knotd runs %q after SIGINT: exit %d, stderr %q", args, code, errOut.String())
			}
			return out.String()
		}, out, errOut
	}

	stopV, outV, errV := follow("-f", "--limit", "1", v)
	stopFresh, outFresh, errFresh := follow(fresh, "--follow", "--json")
	defer func() {
		if t.Failed() {
			t.Logf("stderr of knotd runs -f VAULT: %s\nstderr of knotd runs FRESH --follow: %s", errV, errFresh)
		}
	}()
	testutil.WaitFor(t, waitTimeout, "the newest run listed", func() bool { return strings.Contains(outV.String(), transcript.ShortID(runB)) })

	writeFile(t, filepath.Join(v, "c.md"), "# C\n")
	if code, _, errOut := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("pass over c.md: exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(filepath.Join(v, "c.tieoff.md"))
	require.NoError(t, err)
	runC := runMarker.FindStringSubmatch(string(b))[1]
	testutil.WaitFor(t, waitTimeout, "c's run followed", func() bool { return strings.Contains(outV.String(), transcript.ShortID(runC)) })

	knotd(t, "--once", fresh) // adopts: no runs, but the runs folder appears
	writeFile(t, filepath.Join(fresh, "d.md"), "# D\n")
	if code, _, errOut := knotd(t, "--once", fresh); code != exitOK {
		t.Fatalf("pass over d.md: exit %d: %s", code, errOut)
	}
	testutil.WaitFor(t, waitTimeout, "d's run followed", func() bool { return strings.Contains(outFresh.String(), `"strand":"d.md"`) })

	got := stopV()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[1], transcript.ShortID(runB)) || !strings.Contains(lines[2], transcript.ShortID(runC)) ||
		!strings.Contains(lines[2], " ok ") || !strings.Contains(lines[2], "c.md") || strings.Contains(got, transcript.ShortID(runA)) {
		t.Errorf("knotd runs -f --limit 1 printed\n%s\nwant a heading, b's run (the newest), then c's run, ok", got)
	}
	if got := stopFresh(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, `{"run_id":`) || !strings.Contains(got, `"outcome":"ok"`) {
		t.Errorf("knotd runs --follow --json printed\n%s\nwant d's run as one JSON line", got)
	}
}
