package vault

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/testutil"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/frontmatter"
)

// fields returns the strand's knotd frontmatter fields.
func (e *env) fields(rel string) frontmatter.Fields {
	e.t.Helper()
	doc, err := frontmatter.Parse([]byte(e.read(rel)))
	mustDo(e.t, err)
	return doc.Fields
}

// TestWatch_OwnFrontmatterWritesTriggerNothing: with the claude preset
// (the fake Claude Code CLI reports a session id) and write_session:
// true, the first run writes
// knot_session before the agent runs, and nothing after it: the resume
// handle is machine state, kept in knotd's state. The write is no change
// to run on; the next edit resumes the conversation.
func TestWatch_OwnFrontmatterWritesTriggerNothing(t *testing.T) {
	e := newEnv(t)
	e.useAgent("claude", fakeagent.Claude)
	e.writeSessions()
	e.write("note.md", "# Note\n\nhello\n")
	v := e.open()
	w := e.watch(v, WatchOptions{})

	e.write("note.md", "# Note\n\nhello\nfirst question\n")
	w.settle()
	f := e.fields("note.md")
	if f.Session == "" || f.Resume != "" {
		t.Fatalf("frontmatter after the first run: session %q resume %q; want the session only", f.Session, f.Resume)
	}
	if n := len(w.runs()); n != 1 {
		t.Fatalf("%d runs after one edit; knotd's own writes must trigger nothing: %+v", n, w.runs())
	}
	rec, _ := record(t, v, "note.md")
	if rec.Session != f.Session || rec.Resume != f.Session || rec.Hash != state.HashOf([]byte(e.read("note.md"))) {
		t.Errorf("record = %+v; want the session, the resume handle Claude reported (its session) and the file as it is now", rec)
	}

	e.write("note.md", e.read("note.md")+"second question\n")
	w.settle()
	calls := e.calls()
	if len(calls) != 2 || len(w.runs()) != 2 {
		t.Fatalf("%d calls, %d runs; want 2", len(calls), len(w.runs()))
	}
	if !slices.Contains(calls[0].Args, "--session-id") || !slices.Contains(calls[1].Args, "--resume") {
		t.Errorf("args: first %q, second %q; want a new session, then a resume", calls[0].Args, calls[1].Args)
	}
	secs := e.sections("note.md")
	if len(secs) != 2 || !strings.Contains(secs[1].Body, "user messages seen: 2") {
		t.Errorf("sections = %+v; want the second reply to continue the conversation", secs)
	}
	if prompt := calls[1].Stdin; strings.Contains(prompt, "+knot_") || !strings.Contains(prompt, "+second question") {
		t.Errorf("the second prompt's diff must show the user's edit only:\n%s", prompt)
	}
	if e.fields("note.md").Resume != "" {
		t.Error("knotd wrote a resume handle into the note")
	}
}

// TestWatch_EditDuringARunIsFollowedUp: the user saves while the agent
// runs; knotd writes nothing into the note after the run, and the user's
// version is not taken as processed: one follow-up run, whose diff shows
// the user's edit.
func TestWatch_EditDuringARunIsFollowedUp(t *testing.T) {
	e := newEnv(t)
	e.useAgent("claude", claudeGateBehaviour)
	e.write("note.md", "# Note\n")
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("note.md", "# Note\n\nquestion\n")
	testutil.WaitFor(t, waitTimeout, "the agent to start", func() bool { return fileExists(gateStarted(e.state, 1)) })
	from := w.batchCount()
	e.write("note.md", e.read("note.md")+"edit during the run\n")
	w.waitHint(from, "note.md")
	after := e.read("note.md")
	e.release(1)
	testutil.WaitFor(t, waitTimeout, "the follow-up to start", func() bool { return fileExists(gateStarted(e.state, 2)) })
	e.release(2)
	w.settle()

	calls := e.calls()
	if len(calls) != 2 || len(w.runs()) != 2 {
		t.Fatalf("%d calls, %d runs; want 2 (the run and one follow-up)", len(calls), len(w.runs()))
	}
	diff := calls[1].Stdin
	if !strings.Contains(diff, "+edit during the run") || strings.Contains(diff, "knot_resume") {
		t.Errorf("the follow-up's diff must show the user's edit only:\n%s", diff)
	}
	content := e.read("note.md")
	if content != after {
		t.Errorf("knotd wrote into the note after its run:\n%s\nwant the user's version:\n%s", content, after)
	}
	if rec, _ := record(t, v, "note.md"); rec.Hash != state.HashOf([]byte(content)) || rec.Resume == "" {
		t.Error("the note as it is now is not recorded as processed, with the resume handle in the state")
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestOnce_OwnFrontmatterWritesTriggerNothing: the same with --once: the
// pass after a run that wrote knot_session has nothing to do, and the
// resume handle is in the state only.
func TestOnce_OwnFrontmatterWritesTriggerNothing(t *testing.T) {
	e := newEnv(t)
	e.useAgent("claude", fakeagent.Claude)
	e.writeSessions()
	e.onceFresh()
	e.write("note.md", "no frontmatter yet\n")
	if sum := e.onceFresh(); sum.Ran != 1 || sum.OK != 1 {
		t.Fatalf("summary = %+v; want one ok run", sum)
	}
	if f := e.fields("note.md"); f.Session == "" || f.Resume != "" {
		t.Fatalf("frontmatter = %+v; want knot_session only", f)
	}
	if !strings.HasSuffix(e.read("note.md"), "---\nno frontmatter yet\n") {
		t.Errorf("the body changed:\n%s", e.read("note.md"))
	}
	if sum := e.onceFresh(); sum.Ran != 0 || sum.Skipped != 0 {
		t.Errorf("the next pass: %+v; want nothing to do", sum)
	}
}

// TestOnce_DeletedStrandWithoutSession: a strand adopted without a
// knot_session and deleted before any run still gets its Deleted run; the
// agent is given a fresh session for it (the record, and the session,
// go with the strand).
func TestOnce_DeletedStrandWithoutSession(t *testing.T) {
	e := newEnv(t)
	e.useAgent("claude", fakeagent.Claude)
	e.write("a.md", "# A\n")
	e.onceFresh()
	e.remove("a.md")
	sum := e.onceFresh()
	if sum.Ran != 1 || sum.OK != 1 || sum.Runs[0].Event.String() != "Deleted" {
		t.Fatalf("summary = %+v; want one ok Deleted run", sum)
	}
	calls := e.calls()
	if len(calls) != 1 || !slices.Contains(calls[0].Args, "--session-id") || !strings.Contains(calls[0].Stdin, "Session: ") {
		t.Errorf("calls = %+v; want one new-session call", calls)
	}
	v := e.open()
	if _, ok := record(t, v, "a.md"); ok {
		t.Error("the deleted strand kept a record")
	}
}
