package vault

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/testutil"
)

// TestOnce_BadInputGetsFailureSection: a strand knotd cannot run gets a
// failure section that says why, once, and the other strands of the pass
// run as usual.
func TestOnce_BadInputGetsFailureSection(t *testing.T) {
	tests := []struct {
		name, content, want string
	}{
		{"invalid-yaml", "---\ntitle: [unclosed\n---\nbody\n", "frontmatter cannot be read"},
		{"unterminated-frontmatter", "---\ntitle: x\nbody without an end\n", "frontmatter cannot be read"},
		{"unknown-mode", "---\nknot_mode: sometimes\n---\nbody\n", "knot_mode"},
		{"binary", "\x00\x01\x02PNG\x00 not text", "NUL bytes"},
		{"not-utf8", "caf\xe9 au lait\n", "not valid UTF-8"},
		{"unknown-agent", "---\nknot_agent: nosuch\n---\nbody\n", `unknown agent "nosuch"`},
		{"bad-model", "---\nknot_model: --rm-rf\n---\nbody\n", "knot_model"},
		{"typo-key", "---\nknot_mdoe: off\n---\nbody\n", "knot_mdoe"},
	}
	e := newEnv(t)
	e.onceFresh()
	for _, tt := range tests {
		e.write("bad/"+tt.name+".md", tt.content)
	}
	e.write("good.md", "# Good\n")
	sum := e.onceFresh()
	if sum.Ran != len(tests)+1 || sum.Failed != len(tests) || sum.OK != 1 {
		t.Errorf("summary: %d runs, %d failed, %d ok; want %d, %d, 1", sum.Ran, sum.Failed, sum.OK, len(tests)+1, len(tests))
	}
	for _, tt := range tests {
		rel := "bad/" + tt.name + ".md"
		secs := e.sections(rel)
		if len(secs) != 1 || !secs[0].Failed || !strings.Contains(secs[0].Body, tt.want) {
			t.Errorf("%s: sections %+v; want one failure section mentioning %q", tt.name, secs, tt.want)
		}
		if got := e.read(rel); got != tt.content {
			t.Errorf("%s: knotd changed a strand it could not run:\n%q", tt.name, got)
		}
	}
	if got := e.events("good.md"); !slices.Equal(got, []string{"Created"}) {
		t.Errorf("good.md: events %v; want [Created]", got)
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("the failures ran again without a change: %+v", sum.Runs)
	}
	// Fixing a strand runs it.
	e.write("bad/unknown-mode.md", "---\nknot_mode: append\n---\nbody\n")
	if sum := e.onceFresh(); sum.Ran != 1 || sum.OK != 1 {
		t.Errorf("after the fix: %+v; want one ok run", sum)
	}
}

// TestWatch_BadInputDoesNotStopTheDaemon: in watch mode, a strand that
// cannot be run gets its failure section and the daemon goes on serving
// the others.
func TestWatch_BadInputDoesNotStopTheDaemon(t *testing.T) {
	e := newEnv(t)
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("bad.md", "---\nkey: : :\n---\n")
	e.write("bin.md", "\x00\x00\x00")
	w.settle()
	e.write("good.md", "# Good\n")
	w.settle()
	if got := e.events("bad.md"); !slices.Equal(got, []string{"Created(failed)"}) {
		t.Errorf("bad.md: %v", got)
	}
	if got := e.events("bin.md"); !slices.Equal(got, []string{"Created(failed)"}) {
		t.Errorf("bin.md: %v", got)
	}
	if got := e.events("good.md"); !slices.Equal(got, []string{"Created"}) {
		t.Errorf("good.md: %v", got)
	}
}

// TestOnce_TooBigStrandFailsOnce: a strand over the size limit gets one
// failure section; touching it does not bring another one.
func TestOnce_TooBigStrandFailsOnce(t *testing.T) {
	e := newEnv(t)
	e.userConfig("limits:\n  max_strand_size: 64\n")
	e.onceFresh()
	e.write("big.md", strings.Repeat("long line of text\n", 10))
	sum := e.onceFresh()
	if sum.Ran != 1 || sum.Failed != 1 {
		t.Fatalf("summary = %+v; want one failed run", sum)
	}
	later := time.Now().Add(time.Minute)
	mustDo(t, os.Chtimes(e.abs("big.md"), later, later))
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a touch of the oversized strand ran again: %+v", sum.Runs)
	}
	if secs := e.sections("big.md"); len(secs) != 1 || !strings.Contains(secs[0].Body, "limit") {
		t.Errorf("sections = %+v; want one failure section about the limit", secs)
	}
}

// TestOnce_KnotModeOff: knotd leaves a knot_mode: off strand alone, on
// every event, and writes nothing into it.
func TestOnce_KnotModeOff(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	const content = "---\nknot_mode: off\n---\nprivate\n"
	e.write("private.md", content)
	sum := e.onceFresh()
	if sum.Ran != 0 || sum.Skipped != 1 {
		t.Errorf("Created: summary %+v; want no run and one skipped change", sum)
	}
	e.write("private.md", content+"more\n")
	if sum := e.onceFresh(); sum.Ran != 0 || sum.Skipped != 1 {
		t.Errorf("Modified: summary %+v; want no run and one skipped change", sum)
	}
	if got := e.read("private.md"); got != content+"more\n" {
		t.Errorf("knotd wrote into a knot_mode: off strand:\n%s", got)
	}
	e.remove("private.md")
	if sum := e.onceFresh(); sum.Ran != 0 || sum.Skipped != 1 {
		t.Errorf("Deleted: summary %+v; want no run and one skipped change", sum)
	}
	if e.exists("private.tieoff.md") {
		t.Error("a knot_mode: off strand got a tie-off")
	}
	if sum := e.onceFresh(); sum.Ran != 0 || sum.Skipped != 0 {
		t.Errorf("after the delete: %+v; want nothing left to do", sum)
	}
}

// TestOnce_KnotEvents: only the events listed in knot_events run; the
// others are recorded, so they do not come back.
func TestOnce_KnotEvents(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("created-only.md", "---\nknot_events: created\n---\nx\n")
	e.write("deleted-only.md", "---\nknot_events: [deleted]\n---\nx\n")
	e.write("mod-del.md", "---\nknot_events: [modified, deleted]\n---\nx\n")
	e.onceFresh()
	for _, rel := range []string{"created-only.md", "deleted-only.md", "mod-del.md"} {
		e.write(rel, e.read(rel)+"edit\n")
	}
	e.onceFresh()
	for _, rel := range []string{"created-only.md", "deleted-only.md", "mod-del.md"} {
		e.remove(rel)
	}
	e.onceFresh()
	want := map[string][]string{
		"created-only.md": {"Created"},
		"deleted-only.md": {"Deleted"},
		"mod-del.md":      {"Modified", "Deleted"},
	}
	for rel, evs := range want {
		if got := e.events(rel); !slices.Equal(got, evs) {
			t.Errorf("%s: events %v; want %v", rel, got, evs)
		}
	}
	if sum := e.onceFresh(); sum.Ran != 0 || sum.Skipped != 0 {
		t.Errorf("a later pass: %+v; want nothing", sum)
	}
}

// TestOnce_ReplaceModeKeepsOnlyNewestSection: knot_mode: replace keeps
// one section, the newest, including the Deleted one.
func TestOnce_ReplaceModeKeepsOnlyNewestSection(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("r.md", "---\nknot_mode: replace\n---\nv1\n")
	e.onceFresh()
	e.write("r.md", e.read("r.md")+"v2\n")
	e.onceFresh()
	if got := e.events("r.md"); !slices.Equal(got, []string{"Modified"}) {
		t.Errorf("after a modification: events %v; want [Modified]", got)
	}
	e.remove("r.md")
	e.onceFresh()
	if got := e.events("r.md"); !slices.Equal(got, []string{"Deleted"}) {
		t.Errorf("after the delete: events %v; want [Deleted]", got)
	}
}

// TestProcess_SessionOfGoneStrand: the processor meets a new strand whose
// knot_session belongs to a recorded strand that is gone, before any
// reconcile paired them (the note was copied, then the original deleted):
// it is the same strand moved. The run must not fail and leave a journal
// entry behind that no later start can finish.
func TestProcess_SessionOfGoneStrand(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.writeSessions() // a.md's first run writes its knot_session, which the copy carries
	e.onceFresh()
	e.write("a.md", "# A\n")
	e.onceFresh()
	content := e.read("a.md")
	e.write("b.md", content)
	e.remove("a.md")

	v := e.open()
	rep, _, err := v.pipe.Process(context.Background(), "b.md", Job{FiredBy: "watch"})
	if err != nil {
		t.Fatalf("process(b.md) = %+v, %v", rep, err)
	}
	if ps, err := v.store.Pendings(); err != nil || len(ps) != 0 {
		t.Errorf("journal = %v, %v; want empty", ps, err)
	}
	if _, ok := record(t, v, "a.md"); ok {
		t.Error("a.md still has a record")
	}
	e.close(v)
	v = e.open() // recovery must succeed
	e.close(v)
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a later pass ran: %+v", sum.Runs)
	}
	if got := e.events("b.md"); !slices.Equal(got, []string{"Created"}) {
		t.Errorf("b.md's tie-off = %v; want a.md's history", got)
	}
}

// TestOnce_ChangesShowOnlyTheUsersEdit: with write_session: true, the
// first run of an adopted note writes its knot_session; the Changes diff of the prompt shows what the
// user changed, not knotd's key.
func TestOnce_ChangesShowOnlyTheUsersEdit(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.writeSessions()
	e.write("a.md", "# A\n\nhello\n")
	e.write("b.md", "---\ntitle: B\n---\nhello\n")
	e.onceFresh()
	e.write("a.md", "# A\n\nhello\nworld\n")
	e.write("b.md", "---\ntitle: B\n---\nhello\nworld\n")
	e.onceFresh()
	calls := e.calls()
	if len(calls) != 2 {
		t.Fatalf("%d calls; want 2", len(calls))
	}
	for _, c := range calls {
		_, changes, _ := strings.Cut(c.Stdin, "Changes:\n")
		changes, _, _ = strings.Cut(changes, "Previous tie-off:")
		if !strings.Contains(changes, "+world") || strings.Contains(changes, "+knot_session") || strings.Contains(changes, "+---") {
			t.Errorf("%s: Changes:\n%s\nwant the user's line only", c.Env["KNOT_STRAND"], changes)
		}
		if !strings.Contains(c.Stdin, "knot_session: ") {
			t.Errorf("%s: the prompt's strand content lacks the session knotd wrote", c.Env["KNOT_STRAND"])
		}
	}
}

// TestOnce_SyncsWrittenStrandBeforeJournal: a first run writes the
// strand's knot_session without waiting for its directory to be synced
// (the run starts sooner), and syncs it before the run's journal entry,
// the first record of that version, is committed. A run that writes
// nothing into the strand (one that has its session, or any by default,
// without write_session: true) syncs nothing. A failed sync is logged,
// and the agent's reply is kept all the same.
func TestOnce_SyncsWrittenStrandBeforeJournal(t *testing.T) {
	tests := []struct {
		name    string
		content string
		syncErr error
		noWrite bool // write_session left at its default
		want    []string
	}{
		{"first run writes knot_session", "# a\n", nil, false, []string{"sync notes", "journaled"}},
		{"the strand has its session", "---\nknot_session: 0b3f1e2c-5d6a-4e7b-8c9d-0a1b2c3d4e5f\n---\n# a\n", nil, false, []string{"journaled"}},
		{"the sync fails", "# a\n", syscall.EIO, false, []string{"sync notes", "journaled"}},
		{"by default knotd writes nothing", "# a\n", nil, true, []string{"journaled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.useConversing()
			if !tt.noWrite {
				e.writeSessions()
			}
			e.onceFresh()
			e.write("notes/a.md", tt.content)
			v := e.open()
			var log testutil.Buffer
			v.log = slog.New(slog.NewTextHandler(&log, nil))
			var got []string
			probeOf(v).syncingFn = func(dir string) error {
				got = append(got, "sync "+dir) // vault-relative
				return tt.syncErr
			}
			probeOf(v).journaledFn = func(string) { got = append(got, "journaled") }
			if sum := e.once(v, false); sum.Ran != 1 {
				t.Fatalf("summary %+v; want one run", sum)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("steps %q; want %q", got, tt.want)
			}
			if evs := e.events("notes/a.md"); len(evs) != 1 {
				t.Errorf("tie-off sections %v; want the run's one", evs)
			}
			if logged := strings.Contains(log.String(), "cannot sync the note's folder"); logged != (tt.syncErr != nil) {
				t.Errorf("sync failure logged: %v; want %v", logged, tt.syncErr != nil)
			}
		})
	}
}
