package vault

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/state"

	"github.com/knotd/knotd/internal/strand"
)

// These are the seed's integration tests, on a real vault with the
// built-in digest agent, through the same entry points knotd uses.

// TestOnce_FullTieOffHistory: write, write again, delete, with a --once
// pass after each: three sections, oldest first, the last one Deleted.
func TestOnce_FullTieOffHistory(t *testing.T) {
	e := newEnv(t)
	if sum := e.onceFresh(); sum.Adopted != 0 || sum.Ran != 0 {
		t.Fatalf("first pass on an empty vault = %+v; want nothing", sum)
	}
	steps := []struct {
		do   func()
		want strand.EventType
	}{
		{func() { e.write("notes/plan.md", "# Plan\n\nfirst draft\n") }, strand.Created},
		{func() { e.write("notes/plan.md", e.read("notes/plan.md")+"second thought\n") }, strand.Modified},
		{func() { e.remove("notes/plan.md") }, strand.Deleted},
	}
	for i, st := range steps {
		st.do()
		sum := e.onceFresh()
		if sum.Ran != 1 || sum.OK != 1 || len(sum.Runs) != 1 || sum.Runs[0].Event != st.want {
			t.Fatalf("pass %d: summary %+v; want one ok %v run", i+1, sum, st.want)
		}
	}
	want := []string{"Created", "Modified", "Deleted"}
	if got := e.events("notes/plan.md"); !slices.Equal(got, want) {
		t.Errorf("tie-off events = %v; want %v", got, want)
	}
	if !e.exists("notes/plan.tieoff.md") {
		t.Error("the tie-off of a deleted strand was removed; it must stay")
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a pass with nothing changed ran %+v", sum.Runs)
	}
}

// TestOnce_TieOffSectionsReadable: every section reads back with its
// headers, the strand's path, a UTC timestamp to the second, and the run
// id of the run that wrote it; the digest reply is kept.
func TestOnce_TieOffSectionsReadable(t *testing.T) {
	e := newEnv(t)
	now := time.Date(2026, 11, 21, 19, 30, 5, 0, time.UTC)
	opts := e.options()
	opts.Now = func() time.Time { return now }
	e.onceFresh()
	e.write("ideas/a plan.md", "# A plan\n\n## Event: Modified\nnot a header\n\n---\n\nmore\n")
	v, err := Open(e.root, opts)
	if err != nil {
		t.Fatal(err)
	}
	sum := e.once(v, false)
	e.write("ideas/a plan.md", e.read("ideas/a plan.md")+"\nand another line\n")
	now = now.Add(time.Hour)
	sum2 := e.once(v, false)
	rec, _ := record(t, v, "ideas/a plan.md")
	e.close(v)

	secs := e.sections("ideas/a plan.md")
	if len(secs) != 2 {
		t.Fatalf("got %d sections; want 2", len(secs))
	}
	runs := []RunReport{sum.Runs[0], sum2.Runs[0]}
	for i, s := range secs {
		if s.Strand != "ideas/a plan.md" {
			t.Errorf("section %d: Strand = %q", i, s.Strand)
		}
		if s.Event != runs[i].Event || s.RunID != runs[i].RunID || s.Failed {
			t.Errorf("section %d = %v run %s failed=%v; want %v run %s", i, s.Event, s.RunID, s.Failed, runs[i].Event, runs[i].RunID)
		}
		if want := now.Add(time.Duration(i-1) * time.Hour); !s.Time.Equal(want) {
			t.Errorf("section %d: Time = %v; want %v", i, s.Time, want)
		}
		if !strings.Contains(s.Body, "**A plan**") {
			t.Errorf("section %d: the digest reply does not name the note:\n%s", i, s.Body)
		}
	}
	if rec.LastRunID != secs[1].RunID || rec.Turns != 2 || rec.LastOutcome != state.OutcomeSucceeded {
		t.Errorf("record = %+v; want the last run %s, 2 turns, succeeded", rec, secs[1].RunID)
	}
	raw := e.read("ideas/a plan.tieoff.md")
	if !strings.HasPrefix(raw, "## Event: Created\n## Strand: ideas/a plan.md\n## Timestamp: 2026-11-21T19:30:05Z\n") {
		t.Errorf("tie-off starts with:\n%s", raw[:min(len(raw), 200)])
	}
}

// TestWatch_FullPipelineCreateModifyDelete: the same history in watch
// mode, each change seen through fsnotify.
func TestWatch_FullPipelineCreateModifyDelete(t *testing.T) {
	e := newEnv(t)
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("notes/plan.md", "# Plan\n")
	w.settle()
	e.write("notes/plan.md", e.read("notes/plan.md")+"more\n")
	w.settle()
	e.remove("notes/plan.md")
	w.settle()
	if got, want := e.events("notes/plan.md"), []string{"Created", "Modified", "Deleted"}; !slices.Equal(got, want) {
		t.Errorf("tie-off events = %v; want %v", got, want)
	}
	if got := len(w.runs()); got != 3 {
		t.Errorf("%d runs; want 3: %+v", got, w.runs())
	}
	if _, ok := record(t, v, "notes/plan.md"); ok {
		t.Error("the deleted strand still has a record")
	}
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}
}
