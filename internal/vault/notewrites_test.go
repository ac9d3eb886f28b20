package vault

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// What knotd writes into notes, and when (issue: never lose a word, never
// lose a conversation).

// TestOnce_NoWritesForAgentsWithoutAConversation: the digest, ollama and a
// plain command keep no conversation: knotd writes nothing into the note,
// before or after the run, and the next pass has nothing to do.
func TestOnce_NoWritesForAgentsWithoutAConversation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(e *env)
	}{
		{"digest", func(*env) {}},
		{"a command", func(e *env) { e.useAgent("", fakeagent.Echo) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tc.setup(e)
			e.onceFresh()
			e.write("n.md", "# Note\n\nA question.\n")
			if sum := e.onceFresh(); sum.Ran != 1 || sum.OK != 1 {
				t.Fatalf("summary %+v; want one ok run", sum)
			}
			if got := e.read("n.md"); got != "# Note\n\nA question.\n" {
				t.Errorf("knotd wrote into the note:\n%s", got)
			}
			if rec := e.sessionRecorded("n.md"); rec == "" {
				t.Error("no session recorded: the state keeps it whatever the agent")
			}
			if sum := e.onceFresh(); sum.Ran != 0 {
				t.Errorf("the next pass ran %+v", sum.Runs)
			}
		})
	}
}

// TestOnce_WriteSessionOff: write_session: false keeps knotd out of notes
// even for an agent that keeps a conversation: the session lives in the
// state and the tie-off's markers, survives across runs, and a device
// that lost its state takes it back from the markers.
func TestOnce_WriteSessionOff(t *testing.T) {
	e := newEnv(t)
	e.userConfig("write_session: false\ndefault_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", "", fakeagent.Echo, "--session={session}"))
	e.onceFresh()
	e.write("n.md", "# Note\n\nA question.\n")
	e.onceFresh()
	if got := e.read("n.md"); got != "# Note\n\nA question.\n" {
		t.Fatalf("knotd wrote into the note:\n%s", got)
	}
	s1 := e.sessionRecorded("n.md")
	e.write("n.md", "# Note\n\nA question.\nAnother.\n")
	e.onceFresh()
	if s := e.sessionRecorded("n.md"); s != s1 {
		t.Errorf("the second run's session %s; want the first's %s", s, s1)
	}
	mustDo(t, os.RemoveAll(e.folder().Dir)) // a device without records
	e.write("n.md", "# Note\n\nA question.\nAnother.\nA third.\n")
	e.onceFresh()
	secs := e.sections("n.md")
	if len(secs) != 3 || secs[2].Session != s1 {
		t.Errorf("after the state was lost the run answered in %q; want the markers' session %s", secs[len(secs)-1].Session, s1)
	}
	calls := e.calls()
	if last := calls[len(calls)-1]; !slices.Contains(last.Args, "--session="+s1) {
		t.Errorf("the agent was handed %q; want the session %s", last.Args, s1)
	}
	if strings.Contains(e.read("n.md"), "knot_") {
		t.Errorf("knotd wrote into the note:\n%s", e.read("n.md"))
	}
}

// TestOnce_OwnKeysAreNeverContent: a save whose only difference is
// knotd's keys (the session dropped, with the empty block knotd had made;
// moved; an old knot_resume dropped) runs nothing and writes nothing
// back; the next real edit runs in the same session, and knotd does not
// write the key back into the note then either (write_session: true).
func TestOnce_OwnKeysAreNeverContent(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.writeSessions()
	e.onceFresh()
	e.write("plain.md", "# Plain\n")
	e.write("keys.md", "---\ntitle: T\ntags: [a]\n---\n# Keys\n")
	e.onceFresh()
	for _, rel := range []string{"plain.md", "keys.md"} {
		if e.sessionOf(rel) == "" {
			t.Fatalf("%s got no session", rel)
		}
	}
	sPlain, sKeys := e.sessionOf("plain.md"), e.sessionOf("keys.md")

	e.write("plain.md", "# Plain\n") // git checkout: no frontmatter at all
	moved := "---\nknot_session: " + sKeys + "\ntitle: T\ntags: [a]\n---\n# Keys\n"
	if strings.HasPrefix(e.read("keys.md"), moved[:20]) {
		moved = "---\ntitle: T\ntags: [a]\nknot_session: " + sKeys + "\n---\n# Keys\n"
	}
	e.write("keys.md", moved) // knotd's key moved
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Fatalf("a save of knotd's keys only ran %+v", sum.Runs)
	}
	if e.read("plain.md") != "# Plain\n" {
		t.Errorf("knotd wrote its key back without a run:\n%s", e.read("plain.md"))
	}
	e.write("keys.md", "---\ntitle: T\ntags: [a]\nknot_resume: old-handle\n---\n# Keys\n")
	e.onceFresh()
	e.write("keys.md", "---\ntitle: T\ntags: [a]\n---\n# Keys\n") // the old handle dropped: nothing
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Fatalf("dropping knot_resume ran %+v", sum.Runs)
	}

	e.write("plain.md", "# Plain\n\nA real edit.\n")
	e.onceFresh()
	if got := e.read("plain.md"); got != "# Plain\n\nA real edit.\n" {
		t.Errorf("after a real edit knotd wrote into the note:\n%s", got)
	}
	if got := e.sessionRecorded("plain.md"); got != sPlain {
		t.Errorf("after a real edit the note's recorded session is %q; want its own %s", got, sPlain)
	}
	if secs := e.sections("plain.md"); len(secs) != 2 || secs[1].Session != sPlain {
		t.Errorf("the run answered in another session: %+v", secs)
	}
}

// TestOnce_EmptyNotesWaitForContent: an empty (or white-space) note is not
// run and nothing is written into it; once it has content it runs as
// Created. run_empty: true runs it at once.
func TestOnce_EmptyNotesWaitForContent(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.onceFresh()
	e.write("Untitled.md", "")
	e.write("blank.md", " \n\t\n")
	if sum := e.onceFresh(); sum.Ran != 0 || sum.Failed != 0 {
		t.Fatalf("empty notes ran: %+v", sum)
	}
	if e.read("Untitled.md") != "" || e.read("blank.md") != " \n\t\n" || e.exists("Untitled.tieoff.md") {
		t.Fatal("knotd wrote into an empty note or its tie-off")
	}
	e.rename("Untitled.md", "My idea.md")
	e.write("My idea.md", "# My idea\n")
	sum := e.onceFresh()
	if sum.Ran != 1 || sum.Runs[0].Strand != "My idea.md" || sum.Runs[0].Event.String() != "Created" {
		t.Fatalf("runs %+v; want one Created run of the named note", sum.Runs)
	}

	e2 := newEnv(t)
	e2.userConfig("run_empty: true\n")
	e2.onceFresh()
	e2.write("empty.md", "")
	if sum := e2.onceFresh(); sum.Ran != 1 {
		t.Errorf("run_empty: true: %+v; want the empty note run", sum)
	}
}

// TestOnce_TemplateCopiesRunAtOnce: notes copied from a template that
// carries a knot_session, run concurrently, each get a session of their
// own (in the note where knotd writes sessions, in its state and its
// answers either way); no run fails, no note is stuck, and their later
// edits run in the session each got.
func TestOnce_TemplateCopiesRunAtOnce(t *testing.T) {
	for _, writes := range []bool{true, false} {
		t.Run(map[bool]string{true: "write_session true", false: "by default"}[writes], func(t *testing.T) {
			e := newEnv(t)
			conc := 4
			e.flags.Concurrency = &conc
			e.useConversing()
			if writes {
				e.writeSessions()
			}
			e.onceFresh()
			const tmpl = "---\nknot_session: 6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b\n---\n# Daily\n"
			var names []string
			for i := range 12 {
				n := fmt.Sprintf("daily/%02d.md", i)
				names = append(names, n)
				e.write(n, tmpl+fmt.Sprintf("Day %d.\n", i))
			}
			sum := e.onceFresh()
			if sum.Ran != 12 || sum.Failed != 0 {
				t.Fatalf("summary %+v; want 12 ok runs", sum)
			}
			seen := map[string]string{}
			sessions := map[string]string{}
			for i, n := range names {
				s := e.sessionRecorded(n)
				sessions[n] = s
				if other, dup := seen[s]; dup || s == "" {
					t.Errorf("%s has the session %q, shared with %s", n, s, other)
				}
				seen[s] = n
				if secs := e.sections(n); len(secs) != 1 || secs[0].Session != s {
					t.Errorf("%s was answered in %+v; want its session %s", n, secs, s)
				}
				if inNote := e.sessionOf(n); writes && inNote != s {
					t.Errorf("%s holds knot_session %q; want its own %s", n, inNote, s)
				} else if !writes && e.read(n) != tmpl+fmt.Sprintf("Day %d.\n", i) {
					t.Errorf("knotd wrote into %s:\n%s", n, e.read(n))
				}
			}
			for _, n := range names {
				e.write(n, e.read(n)+"Later.\n")
			}
			if sum := e.onceFresh(); sum.Ran != 12 || sum.Failed != 0 {
				t.Errorf("later edits: %+v; want 12 ok runs", sum)
			}
			for _, n := range names {
				if secs := e.sections(n); len(secs) != 2 || secs[1].Session != sessions[n] {
					t.Errorf("%s's later edit was answered in %+v; want its session %s", n, secs, sessions[n])
				}
			}
			if sum := e.onceFresh(); sum.Ran != 0 || sum.Failed != 0 {
				t.Errorf("a further pass: %+v; want nothing", sum)
			}
		})
	}
}

// TestProcess_ConcurrentCopiesAreNeverWedged: two copies of one template
// processed at the very same time by two goroutines.
func TestProcess_ConcurrentCopiesAreNeverWedged(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.onceFresh()
	const tmpl = "---\nknot_session: 6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b\n---\n# Daily\n"
	e.write("a.md", tmpl+"A\n")
	e.write("b.md", tmpl+"B\n")
	v := e.open()
	defer e.close(v)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, rel := range []string{"a.md", "b.md"} {
		wg.Go(func() { _, _, errs[i] = v.pipe.Process(context.Background(), rel, Job{FiredBy: "watch"}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("process: %v", err)
		}
	}
	ra, _ := record(t, v, "a.md")
	rb, _ := record(t, v, "b.md")
	if ra.Session == "" || ra.Session == rb.Session {
		t.Errorf("sessions %q and %q; want two", ra.Session, rb.Session)
	}
	if ps, _ := v.store.Pendings(); len(ps) != 0 {
		t.Errorf("journal left with %d entries", len(ps))
	}
}

// TestOnce_NoteOpenForWriting: with write_session: true, an editor holds
// the note open for writing (a save under way) through knotd's whole
// pass: knotd never replaces the
// note under it; the run goes on with the session in the state, and the
// editor's save, when it comes, is whole.
func TestOnce_NoteOpenForWriting(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.writeSessions()
	e.onceFresh()
	e.write("n.md", "# Note\n")
	editor, err := os.OpenFile(e.abs("n.md"), os.O_WRONLY, 0)
	mustDo(t, err)
	sum := e.onceFresh()
	_, werr := editor.WriteAt([]byte("# NOTE, saved late\n"), 0)
	mustDo(t, werr)
	mustDo(t, editor.Close())
	if sum.Ran != 1 || sum.Failed != 0 {
		t.Fatalf("summary %+v; want one ok run", sum)
	}
	if got := e.read("n.md"); got != "# NOTE, saved late\n" && !strings.HasSuffix(got, "---\n# NOTE, saved late\n") {
		t.Errorf("the editor's save is not whole in the note:\n%s", got)
	}
	if sum := e.onceFresh(); sum.Ran != 1 {
		t.Errorf("the late save: %+v; want one run", sum.Runs)
	}
}

// TestOnce_LongNames: notes named with up to the file system's longest
// name run, get their session written (write_session: true) and their replies in a tie-off (its
// name shortened where it would be too long), and a later pass has
// nothing to do.
func TestOnce_LongNames(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.writeSessions() // knotd's temporary file beside a note with the longest name
	e.onceFresh()
	names := []string{
		strings.Repeat("長", 78) + ".md",  // 237 bytes
		strings.Repeat("長", 84) + ".md",  // 255 bytes
		strings.Repeat("n", 252) + ".md", // 255 bytes
	}
	for _, n := range names {
		e.write(n, "# A note with a long name\n")
	}
	sum := e.onceFresh()
	if sum.Ran != len(names) || sum.Failed != 0 {
		t.Fatalf("summary %+v; want %d ok runs", sum, len(names))
	}
	for _, n := range names {
		if e.sessionOf(n) == "" {
			t.Errorf("%d-byte name: no knot_session written", len(n))
		}
		if evs := e.events(n); len(evs) != 1 {
			t.Errorf("%d-byte name: tie-off events %v; want one", len(n), evs)
		}
	}
	if sum := e.onceFresh(); sum.Ran != 0 || sum.Failed != 0 {
		t.Errorf("a further pass: %+v; want nothing", sum)
	}
}

// TestOnce_RestoredModTimeIsSeen: a same-size edit in place whose writer
// put the modification time back (touch -r, rsync -t) is a change: the
// stamp's change time tells.
func TestOnce_RestoredModTimeIsSeen(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("n.md", "# Note: one\n")
	e.onceFresh()
	// An hour old: a time knotd trusts (a recent one it does not).
	old := time.Now().Add(-time.Hour)
	mustDo(t, os.Chtimes(e.abs("n.md"), old, old))
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Fatalf("a touch ran: %+v", sum.Runs)
	}
	content := e.read("n.md")
	e.write("n.md", strings.Replace(content, "one", "two", 1)) // the same size, in place
	mustDo(t, os.Chtimes(e.abs("n.md"), old, old))
	if got := ran(e.onceFresh()); !slices.Equal(got, []string{"Modified n.md"}) {
		t.Errorf("runs = %v; want the edit run", got)
	}
}

// TestOnce_AFailedTurnsHandleIsNotKept: Gemini CLI names a session in its
// error report when a note's first turn fails (a 401), and that session
// can never be resumed. knotd does not keep it: the next run starts a new
// conversation, not one doomed to be refused.
func TestOnce_AFailedTurnsHandleIsNotKept(t *testing.T) {
	e := newEnv(t)
	agent := func(fail string) string {
		return fmt.Sprintf("default_agent: g\nagents:\n  g:\n    preset: gemini\n    command: [%q]\n    env: {%s: %q, %s: %q, %s: %q}\n",
			fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Gemini, fakeagent.EnvState, e.state, fakeagent.EnvFail, fail)
	}
	e.onceFresh()
	e.userConfig(agent("error"))
	e.write("a.md", "# A\n")
	if sum := e.onceFresh(); sum.Failed != 1 {
		t.Fatalf("runs = %+v; want the first turn to fail", sum.Runs)
	}
	v := e.open()
	if rec, _ := record(t, v, "a.md"); rec.Resume != "" {
		t.Errorf("the failed turn's handle %q was kept", rec.Resume)
	}
	e.close(v)
	e.userConfig(agent(""))
	e.write("a.md", "# A\n\nagain\n")
	if sum := e.onceFresh(); sum.OK != 1 {
		t.Fatalf("runs = %+v; want the next turn to go through", sum.Runs)
	}
	calls := e.calls()
	if last := calls[len(calls)-1]; slices.Contains(last.Args, "--resume") {
		t.Errorf("the next turn resumed the failed one's session: %q", last.Args)
	}
}

// TestOnce_UneditableFrontmatterRunsWithoutAWrite: a frontmatter block
// knotd cannot take its keys out of again (a bare carriage return the
// YAML reader takes for a line break) gets no knot_session: the note is
// left byte for byte as it is and runs, and its conversation goes on from
// knotd's state.
func TestOnce_UneditableFrontmatterRunsWithoutAWrite(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.onceFresh()
	note := "---\n \rknot_resume: x\n---\nbody\n"
	e.write("a.md", note)
	if sum := e.onceFresh(); sum.OK != 1 {
		t.Fatalf("runs = %+v; want one ok run", sum.Runs)
	}
	if got := e.read("a.md"); got != note {
		t.Errorf("knotd wrote into the note: %q", got)
	}
	e.write("a.md", note+"more\n")
	if sum := e.onceFresh(); sum.OK != 1 || sum.Runs[0].Event.String() != "Modified" {
		t.Fatalf("runs = %+v; want one ok Modified run", sum.Runs)
	}
	calls := e.calls()
	if len(calls) != 2 || !strings.Contains(calls[1].Stdin, "Turn: 2") {
		t.Errorf("the second run did not continue the conversation: %d calls", len(calls))
	}
}
