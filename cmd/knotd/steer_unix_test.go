//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/stretchr/testify/require"
)

// TestKnotd_RunSaysWhatIsTrue: knotd run, pause and resume say of each
// note what they did, or why not, with an exit status to match: with no
// daemon (then run says what ran and how it ended) and through a
// running one. A note knotd would not run (none there, a link, a FIFO,
// a folder, ruled off, knot_mode: off, empty, ignored, a tie-off) is
// refused with why, and exits 1; it is never said to be queued.
func TestKnotd_RunSaysWhatIsTrue(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: echo\nagents:\n  echo:\n    command: [%q]\n    env: {%s: %s, %s: %q}\nrules:\n  - path: private/\n    mode: off\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, state))
	writeFile(t, filepath.Join(v, ".knotignore"), "ignored.md\n")
	writeFile(t, filepath.Join(v, "ok.md"), "# OK\n")
	writeFile(t, filepath.Join(v, "private", "p.md"), "# P\n")
	writeFile(t, filepath.Join(v, "front-off.md"), "---\nknot_mode: off\n---\n# Off\n")
	writeFile(t, filepath.Join(v, "empty.md"), "")
	writeFile(t, filepath.Join(v, "ignored.md"), "# I\n")
	writeFile(t, filepath.Join(v, "ok.tieoff.md"), "")
	require.NoError(t, os.Symlink("ok.md", filepath.Join(v, "link.md")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(v, "fifo.md"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(v, "dir.md"), 0o755))
	if code, _, stderr := knotd(t, "--once", v); code != exitOK { // adopts
		t.Fatalf("adopting: exit %d\n%s", code, stderr)
	}

	refused := []struct{ note, why string }{
		{"missing.md", "no such note"},
		{"link.md", "a symbolic link"},
		{"fifo.md", "a FIFO"},
		{"dir.md", "a folder"},
		{"private/p.md", `rule path "private/"`},
		{"front-off.md", "knot_mode: off"},
		{"empty.md", "it is empty"},
		{"ignored.md", "ignored"},
		{"ok.tieoff.md", "not a note knotd answers"},
	}
	check := func(t *testing.T, daemon bool, code int, stdout, stderr, cmd, note, why string) {
		t.Helper()
		require.Equal(t, exitFailed, code, "knotd %s %s (daemon %v): exit status\nstdout:\n%s\nstderr:\n%s", cmd, note, daemon, stdout, stderr)
		require.Contains(t, stderr, "knotd "+cmd+": "+note+": ")
		require.Contains(t, stderr, why)
		require.NotContains(t, stdout, "queued")
		require.NotContains(t, stdout, "paused "+note)
	}

	// On its own.
	for _, cmd := range []string{"run", "pause"} {
		for _, tt := range refused {
			t.Run("alone/"+cmd+"/"+tt.note, func(t *testing.T) {
				code, out, stderr := knotd(t, cmd, filepath.Join(v, tt.note))
				check(t, false, code, out, stderr, cmd, tt.note, tt.why)
			})
		}
	}
	code, out, stderr := knotd(t, "run", filepath.Join(v, "ok.md"))
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "Modified ok.md: ok (run ")
	code, out, stderr = knotd(t, "run", filepath.Join(v, "ok.md"), filepath.Join(v, "missing.md"))
	require.Equal(t, exitFailed, code, "one note of two refused\n%s%s", out, stderr)
	require.Contains(t, out, "Modified ok.md: ok (run ")
	require.Contains(t, stderr, "missing.md: no such note")
	code, out, stderr = knotd(t, "resume", filepath.Join(v, "ok.md"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "ok.md: was not paused\n", out)
	code, _, stderr = knotd(t, "resume", filepath.Join(v, "missing.md"))
	require.Equal(t, exitFailed, code, stderr)
	require.Contains(t, stderr, "missing.md: no such note")
	code, out, stderr = knotd(t, "pause", filepath.Join(v, "ok.md"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "paused ok.md\n", out)
	code, out, stderr = knotd(t, "pause", filepath.Join(v, "ok.md"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "ok.md: already paused\n", out)
	code, out, stderr = knotd(t, "resume", filepath.Join(v, "ok.md"))
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "resumed ok.md\n", out)
	code, _, stderr = knotd(t, "run")
	require.Equal(t, exitUsage, code, stderr)

	// retry leaves a failure no retry can fix: the note's own content.
	writeFile(t, filepath.Join(v, "bad.md"), "---\nknot_agent: [\n---\n# Bad\n")
	code, _, stderr = knotd(t, "--once", v)
	require.Equal(t, exitFailed, code, "bad.md's frontmatter cannot be read: its run fails\n%s", stderr)
	require.Len(t, tieoffSections(t, filepath.Join(v, "bad.tieoff.md")), 1)
	code, out, stderr = knotd(t, "retry", v)
	require.Equal(t, exitFailed, code, "%s%s", out, stderr)
	require.Contains(t, stderr, "knotd retry: bad.md: a retry would fail the same way: its frontmatter cannot be read")
	require.Len(t, tieoffSections(t, filepath.Join(v, "bad.tieoff.md")), 1, "retry ran a note whose failure is its content")

	// Through a running knotd.
	cmd, _ := startWatching(t, v)
	daemon := func(args ...string) (code int, stdout, stderr string) {
		var o, e strings.Builder
		p := knotdProcess(t, args...)
		p.Stdout, p.Stderr = &o, &e
		err := p.Run()
		if err != nil && p.ProcessState == nil {
			t.Fatalf("knotd %v: %v", args, err)
		}
		return p.ProcessState.ExitCode(), o.String(), e.String()
	}
	for _, c := range []string{"run", "pause"} {
		for _, tt := range refused {
			t.Run("daemon/"+c+"/"+tt.note, func(t *testing.T) {
				code, out, stderr := daemon(c, filepath.Join(v, tt.note))
				check(t, true, code, out, stderr, c, tt.note, tt.why)
			})
		}
	}
	code, out, stderr = daemon("run", filepath.Join(v, "ok.md"))
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "ok.md")
	require.NotContains(t, stderr, "ok.md")
	code, out, stderr = daemon("retry", v)
	require.Equal(t, exitFailed, code, "%s%s", out, stderr)
	require.Contains(t, stderr, "knotd retry: bad.md: a retry would fail the same way")
	require.NotContains(t, out, "queued")
	code, _, stderr = daemon("resume", filepath.Join(v, "missing.md"))
	require.Equal(t, exitFailed, code, stderr)
	require.Contains(t, stderr, "missing.md: no such note")
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, cmd.Wait())
}

// TestKnotd_RunOnAStandbyDevice: with no daemon here and another device
// answering the vault, knotd run runs nothing, says why, and exits 1.
func TestKnotd_RunOnAStandbyDevice(t *testing.T) {
	v, c := setup(t)
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: echo\nagents:\n  echo:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, t.TempDir()))
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	if code, _, stderr := knotd(t, "--once", v); code != exitOK { // this device answers
		t.Fatalf("adopting: exit %d\n%s", code, stderr)
	}
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // another device
	code, out, stderr := knotd(t, "run", filepath.Join(v, "a.md"))
	require.Equal(t, exitFailed, code, "%s%s", out, stderr)
	require.Contains(t, stderr, "stands by")
	require.Empty(t, out)
}
