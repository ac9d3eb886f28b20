//go:build unix

package vault

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
)

// onceLoggedErr is onceLogged that returns the pass's error instead of
// failing the test on it (what knotd --once exits with).
func (e *env) onceLoggedErr() (Summary, string, error) {
	e.t.Helper()
	var log testutil.Buffer
	opts := e.options()
	opts.Logger = slog.New(slog.NewTextHandler(&log, nil))
	v, err := Open(e.root, opts)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	sum, err := v.Once(context.Background(), OnceOptions{})
	if cerr := v.Close(); cerr != nil {
		e.t.Fatalf("Close: %v", cerr)
	}
	return sum, log.String(), err
}

// TestOnce_TieOffThatCannotBeWritten: a tie-off that is a symbolic link
// (to a file inside the vault or out of it), or whose folder was swapped
// for a link out of the vault after its note was processed, can never be
// written as it is. knotd does not run the agent for the note's change
// (a Deleted included), says so once, exits 0, keeps serving the other
// notes, and runs the change once the tie-off can be written.
func TestOnce_TieOffThatCannotBeWritten(t *testing.T) {
	const warning = "the note's tie-off cannot be written"
	for _, tc := range []struct {
		name, note string
		// before is done before the first pass, break after it (the
		// note processed); fix undoes it. victim is a file that must
		// not change.
		before, breakIt, fix func(t *testing.T, e *env) (victim string)
		// wantFixed is the note's run once fixed ("" for none).
		wantFixed string
	}{
		{name: "a new note, its tie-off a link to a file inside the vault", note: "n.md",
			breakIt: func(t *testing.T, e *env) string {
				e.write("target.txt", "inside\n")
				mustDo(t, os.Symlink("target.txt", e.abs("n.tieoff.md")))
				e.write("n.md", "# N\n")
				return e.abs("target.txt")
			},
			fix:       func(t *testing.T, e *env) string { e.remove("n.tieoff.md"); return "" },
			wantFixed: "Created n.md"},
		{name: "a changed note, its tie-off a link out of the vault", note: "n.md",
			before: func(t *testing.T, e *env) string { e.write("n.md", "# N\n"); return "" },
			breakIt: func(t *testing.T, e *env) string {
				victim := outsideFile(t, "outside\n")
				e.remove("n.tieoff.md")
				mustDo(t, os.Symlink(victim, e.abs("n.tieoff.md")))
				e.write("n.md", "# N\n\nmore\n")
				return victim
			},
			fix:       func(t *testing.T, e *env) string { e.remove("n.tieoff.md"); return "" },
			wantFixed: "Modified n.md"},
		{name: "a deleted note, its tie-off a link out of the vault", note: "n.md",
			before: func(t *testing.T, e *env) string { e.write("n.md", "# N\n"); return "" },
			breakIt: func(t *testing.T, e *env) string {
				victim := outsideFile(t, "outside\n")
				e.remove("n.tieoff.md")
				mustDo(t, os.Symlink(victim, e.abs("n.tieoff.md")))
				e.remove("n.md")
				return victim
			},
			fix:       func(t *testing.T, e *env) string { e.remove("n.tieoff.md"); return "" },
			wantFixed: "Deleted n.md"},
		{name: "the note's folder swapped for a link out of the vault", note: "notes/n.md",
			before: func(t *testing.T, e *env) string { e.write("notes/n.md", "# N\n"); return "" },
			breakIt: func(t *testing.T, e *env) string {
				outside := t.TempDir()
				mustDo(t, os.Rename(e.abs("notes"), filepath.Join(outside, "notes")))
				mustDo(t, os.Symlink(filepath.Join(outside, "notes"), e.abs("notes")))
				return filepath.Join(outside, "notes", "n.tieoff.md")
			},
			fix: func(t *testing.T, e *env) string {
				target, err := os.Readlink(e.abs("notes"))
				mustDo(t, err)
				e.remove("notes")
				mustDo(t, os.Rename(target, e.abs("notes")))
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.useAgent("", fakeagent.Echo)
			e.onceFresh()
			if tc.before != nil {
				tc.before(t, e)
				e.onceFresh()
			}
			callsBefore := len(e.calls())
			victim := tc.breakIt(t, e)
			var victimWas []byte
			if victim != "" {
				var err error
				victimWas, err = os.ReadFile(victim)
				mustDo(t, err)
			}
			for pass := range 3 {
				e.write("other.md", strings.Repeat("# Other\n", pass+1))
				sum, log, err := e.onceLoggedErr()
				if err != nil || sum.Failed != 0 {
					t.Errorf("pass %d: %v, %d failed (%+v); want a pass that succeeds", pass, err, sum.Failed, sum.Runs)
				}
				if slices.ContainsFunc(sum.Runs, func(r RunReport) bool { return r.Strand == tc.note }) {
					t.Errorf("pass %d ran the note: %v", pass, ran(sum))
				}
				if !slices.ContainsFunc(sum.Runs, func(r RunReport) bool { return r.Strand == "other.md" && !r.Failed() }) {
					t.Errorf("pass %d did not serve other.md: %v", pass, ran(sum))
				}
				want := 0
				if pass == 0 {
					want = 1
				}
				if n := strings.Count(log, warning); n != want {
					t.Errorf("pass %d said it %d times; want %d:\n%s", pass, n, want, log)
				}
			}
			for _, c := range e.calls()[callsBefore:] {
				if strings.Contains(c.Stdin, "# N") {
					t.Errorf("the agent was run for the note: %.200q", c.Stdin)
				}
			}
			if victim != "" {
				if b, err := os.ReadFile(victim); err != nil || string(b) != string(victimWas) {
					t.Errorf("the file behind the link was written: %q, %v", b, err)
				}
			}
			if len(e.rescued()) != 0 {
				t.Errorf("rescued %v; no run, nothing to keep", e.rescued())
			}

			tc.fix(t, e)
			sum := e.onceFresh()
			if got := ran(sum); tc.wantFixed == "" && len(got) != 0 || tc.wantFixed != "" && !slices.Equal(got, []string{tc.wantFixed}) {
				t.Errorf("once fixed, runs = %v; want %q", got, tc.wantFixed)
			}
			if sum.Failed != 0 {
				t.Errorf("once fixed, %d failed: %+v", sum.Failed, sum.Runs)
			}
		})
	}
}

// TestOnce_ReplyForATieOffThatBecameALink: a reply journaled for a tie-off
// that has become a symbolic link (after the run, or by an earlier knotd
// that kept it journaled) is kept in the rescued folder of knotd's state
// directory, said once with where, and its run recorded: no later pass
// fails on it or tries it again, and the file behind the link is not
// written.
func TestOnce_ReplyForATieOffThatBecameALink(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.onceFresh()
	e.write("note.md", "# Note\n")
	v := e.open()
	probeOf(v).appendingFn = func(string) error { return syscall.ENOSPC }
	if sum := e.once(v, false); sum.Failed != 1 {
		t.Fatalf("summary = %+v; want the run reported failed, its reply journaled", sum)
	}
	ps, err := v.store.Pendings()
	mustDo(t, err)
	e.close(v)
	if len(ps) != 1 {
		t.Fatalf("journal holds %d entries; want 1", len(ps))
	}
	victim := outsideFile(t, "outside\n")
	mustDo(t, os.Symlink(victim, e.abs("note.tieoff.md")))

	for pass := range 3 {
		e.write("other.md", strings.Repeat("# Other\n", pass+1))
		sum, log, err := e.onceLoggedErr()
		if err != nil || sum.Failed != 0 {
			t.Errorf("pass %d: %v, %d failed (%+v); want a pass that succeeds", pass, err, sum.Failed, sum.Runs)
		}
		if slices.ContainsFunc(sum.Runs, func(r RunReport) bool { return r.Strand == "note.md" }) {
			t.Errorf("pass %d ran the note again: %v", pass, ran(sum))
		}
		want := 0
		if pass == 0 {
			want = 1
		}
		if n := strings.Count(log, "a run's reply cannot go into its tie-off"); n != want {
			t.Errorf("pass %d said it %d times; want %d:\n%s", pass, n, want, log)
		}
		if pass == 0 {
			kept := e.rescued()
			if len(kept) != 1 {
				t.Fatalf("rescued = %v; want the reply", kept)
			}
			for name, content := range kept {
				if !strings.Contains(log, name) {
					t.Errorf("the log does not say where the reply is (%s):\n%s", name, log)
				}
				if !strings.Contains(content, "knot:run "+ps[0].RunID) || !strings.Contains(content, "ECHO:") {
					t.Errorf("the kept reply is not the run's section:\n%s", content)
				}
			}
		}
	}
	s, err := openStoreOnly(e)
	mustDo(t, err)
	left, err := s.Pendings()
	mustDo(t, err)
	mustDo(t, s.Close())
	if len(left) != 0 {
		t.Errorf("journal holds %d entries; want the run done", len(left))
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "outside\n" {
		t.Errorf("the file behind the link was written: %q, %v", b, err)
	}
}

// TestWatch_RunsOnceTheTieOffIsFixed: while knotd watches, a note whose
// tie-off is a symbolic link waits; removing the link runs the change,
// without another save of the note.
func TestWatch_RunsOnceTheTieOffIsFixed(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.onceFresh()
	v := e.open()
	w := e.watch(v, WatchOptions{})
	victim := outsideFile(t, "outside\n")
	mustDo(t, os.Symlink(victim, e.abs("n.tieoff.md")))
	e.write("n.md", "# N\n")
	w.settle()
	if runs := w.runs(); len(runs) != 0 {
		t.Fatalf("runs = %+v; want none while the tie-off is a link", runs)
	}
	e.remove("n.tieoff.md")
	testutil.WaitFor(t, waitTimeout, "the note's run", func() bool { return len(w.runs()) == 1 })
	w.settle()
	if runs := w.runs(); len(runs) != 1 || runs[0].Strand != "n.md" || runs[0].Failed() {
		t.Errorf("runs = %+v; want one run of n.md", runs)
	}
	if secs := e.sections("n.md"); len(secs) != 1 {
		t.Errorf("tie-off sections = %d; want 1", len(secs))
	}
	if b, _ := os.ReadFile(victim); string(b) != "outside\n" {
		t.Errorf("the file behind the link was written: %q", b)
	}
}
