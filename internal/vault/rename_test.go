package vault

import (
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/frontmatter"
)

// sessionOf returns the knot_session in the strand's frontmatter.
func (e *env) sessionOf(rel string) string {
	e.t.Helper()
	doc, err := frontmatter.Parse([]byte(e.read(rel)))
	if err != nil {
		e.t.Fatalf("%s: %v", rel, err)
	}
	return doc.Fields.Session
}

// sessionRecorded returns the session knotd recorded for the strand rel.
func (e *env) sessionRecorded(rel string) string {
	e.t.Helper()
	v := e.open()
	defer e.close(v)
	rec, ok := record(e.t, v, rel)
	if !ok {
		e.t.Fatalf("%s has no record", rel)
	}
	return rec.Session
}

// checkMoved checks that the strand's history moved from from to to: the
// tie-off, the record (the session it had, turns kept) and no record left
// at from.
func checkMoved(t *testing.T, e *env, v *Vault, from, to string, wantEvents []string, turns int, session string) {
	t.Helper()
	if e.exists(strings.TrimSuffix(from, ".md") + ".tieoff.md") {
		t.Errorf("the old tie-off of %s is still there", from)
	}
	if got := e.events(to); !slices.Equal(got, wantEvents) {
		t.Errorf("tie-off of %s: events %v; want %v", to, got, wantEvents)
	}
	if _, ok := record(t, v, from); ok {
		t.Errorf("%s still has a record", from)
	}
	rec, ok := record(t, v, to)
	if !ok || rec.Session != session || session == "" || rec.Turns != turns {
		t.Errorf("record of %s = %+v, %v; want session %s and %d turns", to, rec, ok, session, turns)
	}
	if own := e.sessionOf(to); own != "" && own != session {
		t.Errorf("%s's knot_session is %s; want %s", to, own, session)
	}
}

// TestOnce_RenameKeepsHistory: a strand moved to another directory is the
// same strand: no run, its tie-off and record move with it. A later edit
// is a Modified run at the new path.
func TestOnce_RenameKeepsHistory(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("notes/plan.md", "# Plan\n")
	e.onceFresh()
	e.write("notes/plan.md", e.read("notes/plan.md")+"more\n")
	e.onceFresh()
	session := e.sessionRecorded("notes/plan.md")

	e.rename("notes/plan.md", "archive/2026/plan.md")
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Fatalf("a pure move ran: %+v", sum.Runs)
	}
	v := e.open()
	checkMoved(t, e, v, "notes/plan.md", "archive/2026/plan.md", []string{"Created", "Modified"}, 2, session)
	e.close(v)

	e.write("archive/2026/plan.md", e.read("archive/2026/plan.md")+"after the move\n")
	sum := e.onceFresh()
	if sum.Ran != 1 || sum.Runs[0].Event.String() != "Modified" {
		t.Fatalf("an edit after the move: %+v; want one Modified run", sum.Runs)
	}
	if got := e.events("archive/2026/plan.md"); len(got) != 3 {
		t.Errorf("tie-off events = %v; want 3 sections", got)
	}
}

// TestOnce_RenameWithEditIsModified: moved and edited before knotd looked:
// one Modified run at the new path, with the history.
func TestOnce_RenameWithEditIsModified(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("a.md", "# A\n")
	e.onceFresh()
	session := e.sessionRecorded("a.md")
	e.rename("a.md", "b.md")
	e.write("b.md", e.read("b.md")+"edited\n") // in place: the same file, edited
	sum := e.onceFresh()
	if sum.Ran != 1 || sum.Runs[0].Strand != "b.md" || sum.Runs[0].Event.String() != "Modified" {
		t.Fatalf("summary runs = %+v; want one Modified run of b.md", sum.Runs)
	}
	v := e.open()
	checkMoved(t, e, v, "a.md", "b.md", []string{"Created", "Modified"}, 2, session)
}

// TestWatch_RenameKeepsHistory: the same in watch mode, where the old and
// the new path settle separately: no Deleted and no Created run.
func TestWatch_RenameKeepsHistory(t *testing.T) {
	e := newEnv(t)
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("notes/plan.md", "# Plan\n")
	w.settle()
	rec, _ := record(t, v, "notes/plan.md")
	e.rename("notes/plan.md", "archive/plan.md")
	w.settle()
	e.rename("archive/plan.md", "archive/renamed.md")
	w.settle()
	if got := len(w.runs()); got != 1 {
		t.Errorf("%d runs; want 1 (the Created), moves run nothing: %+v", got, w.runs())
	}
	checkMoved(t, e, v, "notes/plan.md", "archive/renamed.md", []string{"Created"}, 1, rec.Session)
}

// TestOnce_RenameOfAdoptedStrand: a strand that already had a
// knot_session when knotd adopted it (its state was lost, or it came from
// another machine) keeps its history when moved.
func TestOnce_RenameOfAdoptedStrand(t *testing.T) {
	e := newEnv(t)
	const id = "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21"
	e.write("a.md", "---\nknot_session: "+id+"\n---\n# A\n")
	e.write("a.tieoff.md", "## Event: Created\n## Strand: a.md\n## Timestamp: 2026-01-01T00:00:00Z\n---\n\nolder history\n")
	e.onceFresh() // adopt
	e.rename("a.md", "b.md")
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Fatalf("moving an adopted strand ran: %+v", sum.Runs)
	}
	if !e.exists("b.tieoff.md") || e.exists("a.tieoff.md") {
		t.Error("the tie-off did not move with the adopted strand")
	}
	v := e.open()
	if rec, ok := record(t, v, "b.md"); !ok || rec.Session != id {
		t.Errorf("record of b.md = %+v, %v; want session %s", rec, ok, id)
	}
}

// TestOnce_CopiedNoteGetsItsOwnSession: with write_session: true, a note
// copied with its knot_session is a new strand: it gets a session of its own, written
// into its frontmatter, and a Created run that does not continue the
// original's conversation; the original is untouched. knot_resume is the
// user's: knotd leaves it in the copy.
func TestOnce_CopiedNoteGetsItsOwnSession(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.writeSessions()
	e.onceFresh()
	e.write("a.md", "---\nknot_resume: conversation-of-a\n---\n# A\n")
	e.onceFresh()
	orig := e.read("a.md")
	idA := e.sessionOf("a.md")
	e.write("copy.md", orig)
	sum := e.onceFresh()
	if sum.Ran != 1 || sum.Runs[0].Strand != "copy.md" || sum.Runs[0].Event.String() != "Created" {
		t.Fatalf("runs = %+v; want one Created run of copy.md", sum.Runs)
	}
	idCopy := e.sessionOf("copy.md")
	if idCopy == "" || idCopy == idA {
		t.Errorf("copy.md's session = %q; want a new one (the original's is %s)", idCopy, idA)
	}
	if e.read("a.md") != orig {
		t.Error("the original was changed")
	}
	if !strings.Contains(e.read("copy.md"), "knot_resume: conversation-of-a") {
		t.Errorf("knotd took the user's knot_resume out of the copy:\n%s", e.read("copy.md"))
	}
	if got := e.events("a.md"); len(got) != 1 {
		t.Errorf("the original's tie-off = %v; want its one section", got)
	}
	v := e.open()
	ra, _ := record(t, v, "a.md")
	rc, _ := record(t, v, "copy.md")
	if ra.Session != idA || rc.Session != idCopy {
		t.Errorf("records: a.md %s, copy.md %s; want %s and %s", ra.Session, rc.Session, idA, idCopy)
	}
	if ra.Resume != "conversation-of-a" || rc.Resume != "" {
		t.Errorf("resume handles: a.md %q, copy.md %q; want the one a.md names, and none for the copy", ra.Resume, rc.Resume)
	}
	e.close(v)
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("knotd's write of the copy's session ran again: %+v", sum.Runs)
	}
}

// TestOnce_RenameOfANoteThatNeverRan: a note adopted on first contact and
// never run has no knot_session; moved, it is still the same strand: no
// Deleted and no Created run, its tie-off and record follow it. So does a
// note moved by copy and delete (a sync tool, git), matched by content.
func TestOnce_RenameOfANoteThatNeverRan(t *testing.T) {
	for _, how := range []string{"rename", "copy and delete"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			e.write("inbox/idea.md", "# Idea\n\nsome words\n")
			e.write("inbox/idea.tieoff.md", "## Event: Created\n## Strand: inbox/idea.md\n## Timestamp: 2026-01-01T00:00:00Z\n---\n\nolder history\n")
			e.onceFresh() // adopts
			session := e.sessionRecorded("inbox/idea.md")
			if how == "rename" {
				e.rename("inbox/idea.md", "projects/idea.md")
			} else {
				e.write("projects/idea.md", e.read("inbox/idea.md"))
				e.remove("inbox/idea.md")
			}
			if sum := e.onceFresh(); sum.Ran != 0 {
				t.Fatalf("moving a note that never ran: %+v; want no run", sum.Runs)
			}
			if !e.exists("projects/idea.tieoff.md") || e.exists("inbox/idea.tieoff.md") {
				t.Error("the tie-off did not move with the note")
			}
			v := e.open()
			defer e.close(v)
			if _, ok := record(t, v, "inbox/idea.md"); ok {
				t.Error("the old path kept a record")
			}
			if rec, ok := record(t, v, "projects/idea.md"); !ok || (session != "" && rec.Session != session) {
				t.Errorf("record of the new path = %+v, %v", rec, ok)
			}
		})
	}
}

// TestOnce_NewNoteInADeletedOnesPlace: a note deleted and another,
// different one created is a Deleted and a Created run, whatever inode
// the new one got.
func TestOnce_NewNoteInADeletedOnesPlace(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("old.md", "# Old\n")
	e.onceFresh()
	e.remove("old.md")
	e.write("new.md", "# New, other words\n")
	got := ran(e.onceFresh())
	slices.Sort(got)
	if !slices.Equal(got, []string{"Created new.md", "Deleted old.md"}) {
		t.Errorf("runs = %v; want a Deleted and a Created run", got)
	}
}
