package ctl

import (
	"context"
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/state"
)

// fakeHost is a vault with a real state store, a scheduler that records
// what is submitted, and the notes knotd would not run (rel → why).
type fakeHost struct {
	store  *state.Store
	live   *fakeScheduler
	notRun map[string]string
	qs     *fakeQuestions
}

func (h fakeHost) Now() time.Time                  { return time.Now() }
func (h fakeHost) Log() *slog.Logger               { return slog.New(slog.DiscardHandler) }
func (h fakeHost) Store() *state.Store             { return h.store }
func (h fakeHost) DefaultAgent() string            { return "a" }
func (h fakeHost) WhyNotRun(rel string) string     { return h.notRun[rel] }
func (h fakeHost) Deleted(string) bool             { return false }
func (h fakeHost) Reload(string) ([]string, error) { return nil, nil }
func (h fakeHost) ReadStrand(string) ([]byte, bool, error) {
	return nil, false, nil
}
func (h fakeHost) Live() (Scheduler, bool) {
	if h.live == nil {
		return nil, false
	}
	return h.live, true
}

// fakeScheduler records the submissions ("rel by hand" or "rel") and
// answers each as says says (Queued when it says nothing).
type fakeScheduler struct {
	says      map[string]scheduler.Submitted
	submitted []string
}

func (s *fakeScheduler) Submit(rel string, byHand bool) scheduler.Submitted {
	if byHand {
		s.submitted = append(s.submitted, rel+" by hand")
	} else {
		s.submitted = append(s.submitted, rel)
	}
	return s.says[rel]
}
func (s *fakeScheduler) Queued() []control.Queued { return nil }

func openStore(t *testing.T) *state.Store {
	t.Helper()
	s, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// TestNotesOf: the notes the user names become strands once each, and
// what is no note, or one knotd would not run, is refused with why.
func TestNotesOf(t *testing.T) {
	notRun := map[string]string{"off.md": "not sent to any agent: rule path \"off.md\" (mode: off)"}
	rels, res := NotesOf([]string{"a.md", "./a.md", "b/c.md", "../x.md", "n.txt", "a.tieoff.md", "off.md"}, func(rel string) string { return notRun[rel] })
	if want := []string{"a.md", "b/c.md"}; !reflect.DeepEqual(rels, want) {
		t.Errorf("strands %q; want %q", rels, want)
	}
	want := []control.Refusal{
		{Note: "../x.md", Why: "not a path inside the vault"},
		{Note: "n.txt", Why: "not a note knotd answers (a Markdown file that is not a tie-off)"},
		{Note: "a.tieoff.md", Why: "not a note knotd answers (a Markdown file that is not a tie-off)"},
		{Note: "off.md", Why: notRun["off.md"]},
	}
	if !reflect.DeepEqual(res.Refused, want) {
		t.Errorf("refused %+v; want %+v", res.Refused, want)
	}
}

// TestActive: the runs in progress are listed oldest first, with how
// long each has run, until they are done; Running counts them.
func TestActive(t *testing.T) {
	var a Active
	c := New(nil, Options{Active: &a})
	t0 := time.Now()
	a.Start(control.Running{Note: "new.md", Started: t0.Add(-time.Second)})
	a.Start(control.Running{Note: "old.md", Started: t0.Add(-time.Minute)})
	a.Start(control.Running{Note: "gone.md", Started: t0.Add(-time.Hour)})
	a.Done("gone.md")
	if n := c.Running(); n != 2 {
		t.Fatalf("Running() = %d; want 2", n)
	}
	got := a.list(t0)
	if len(got) != 2 || got[0].Note != "old.md" || got[0].Elapsed != time.Minute || got[1].Note != "new.md" || got[1].Elapsed != time.Second {
		t.Fatalf("list = %+v; want old.md (a minute), then new.md (a second)", got)
	}
}

// TestPauseRunResume: a paused note says so when paused again; a run by
// hand goes to the scheduler, saying where it waits; a resume resumes
// every paused note and submits its change, refuses one that was not
// paused and that knotd would not run, and says of the rest that they
// were not paused.
func TestPauseRunResume(t *testing.T) {
	live := &fakeScheduler{says: map[string]scheduler.Submitted{"b.md": scheduler.FollowUp, "c.md": scheduler.Merged}}
	h := fakeHost{store: openStore(t), live: live, notRun: map[string]string{}}
	c := New(h, Options{})
	ctx := context.Background()
	check := func(what string, res control.Result, err error, want control.Result) {
		t.Helper()
		if err != nil || !reflect.DeepEqual(res, want) {
			t.Fatalf("%s = %+v, %v; want %+v", what, res, err, want)
		}
	}
	res, err := c.Pause(ctx, []string{"a.md", "b.md"}, "")
	check("pause", res, err, control.Result{Done: []string{"a.md", "b.md"}})
	res, err = c.Pause(ctx, []string{"a.md"}, "")
	check("pause again", res, err, control.Result{Done: []string{"a.md"}, Did: map[string]string{"a.md": "already paused"}})
	ps, err := h.store.Paused()
	if err != nil || len(ps) != 2 || ps[0].Why != "paused by knotd pause" {
		t.Fatalf("paused %+v, %v; want a.md and b.md, paused by knotd pause", ps, err)
	}

	res, err = c.Run(ctx, []string{"a.md", "b.md", "c.md"})
	check("run", res, err, control.Result{Done: []string{"a.md", "b.md", "c.md"},
		Did: map[string]string{"b.md": "queued behind its run in progress", "c.md": "already waiting to run"}})

	h.notRun["off.md"] = "no such note"
	live.submitted = nil
	res, err = c.Resume(ctx, []string{"a.md", "c.md", "off.md"})
	check("resume", res, err, control.Result{Done: []string{"a.md", "c.md"}, Did: map[string]string{"c.md": "was not paused"},
		Refused: []control.Refusal{{Note: "off.md", Why: "no such note"}}})
	res, err = c.Resume(ctx, nil)
	check("resume all", res, err, control.Result{Done: []string{"b.md"}})
	if want := []string{"a.md", "b.md"}; !reflect.DeepEqual(live.submitted, want) {
		t.Fatalf("submitted %q; want the resumed notes' changes %q", live.submitted, want)
	}
	if ps, err := h.store.Paused(); err != nil || len(ps) != 0 {
		t.Fatalf("paused %+v, %v; want none", ps, err)
	}
}
