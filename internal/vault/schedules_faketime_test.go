package vault

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/schedule"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vault/internal/schedules"
)

// scheduleAgent answers at once and keeps the occurrences of the
// Scheduled runs it was given.
type scheduleAgent struct {
	mu   sync.Mutex
	occs []agentrun.Occurrence
}

func (a *scheduleAgent) Run(_ context.Context, req agentrun.Request) (agentrun.Result, error) {
	if req.Event.Type == strand.Scheduled && req.Schedule != nil {
		a.mu.Lock()
		a.occs = append(a.occs, *req.Schedule)
		a.mu.Unlock()
	}
	return agentrun.Result{Outcome: agentrun.OutcomeOK, Reply: "brief for " + req.Now.Format(time.DateOnly)}, nil
}

func (a *scheduleAgent) got() []agentrun.Occurrence {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]agentrun.Occurrence(nil), a.occs...)
}

// TestWatch_ScheduleInFakeTime is issue 27's "done when", in fake time
// (a synctest bubble: its clock starts on 2000-01-01 00:00 UTC, a
// Saturday): a note with a daily schedule runs once a day across a week,
// on time, and the schedule does not fire for the past when first seen;
// knotd stopped for two days runs it once on the restart, late, saying
// which occurrences the run stands for, not twice; and a device that
// lost knotd's record of the schedules (a handover: the tie-off is all it
// has) neither repeats the occurrence the tie-off records nor skips the
// next one.
func TestWatch_ScheduleInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		poll, debounce, maxWait := 10*time.Minute, 30*time.Second, time.Minute
		e.flags.Poll, e.flags.Debounce, e.flags.MaxWait = &poll, &debounce, &maxWait
		e.write("brief.md", "---\nknot_schedule: daily 07:00 UTC\n---\n# Brief\n\nWhat is on today?\n")
		e.onceFresh() // adopted: no run, and the schedule starts from now
		agent := &scheduleAgent{}
		day := func(d, h int) time.Time { return time.Date(2000, 1, d, h, 0, 0, 0, time.UTC) }

		// watch opens the vault and watches it; the func it returns stops
		// and closes it.
		var v *Vault
		watch := func() func() {
			o := e.options()
			o.Agent = agent
			var err error
			v, err = Open(e.root, o)
			mustDo(t, err)
			v.checkEvery = 10 * time.Minute
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- v.Watch(ctx, WatchOptions{}) }()
			var once sync.Once
			stop := func() {
				once.Do(func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("Watch: %v", err)
					}
					if err := v.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
			}
			t.Cleanup(stop) // a test that fails midway stops it too
			return stop
		}
		until := func(at time.Time) {
			time.Sleep(time.Until(at))
			synctest.Wait()
		}
		scheduled := func() (dues []time.Time) {
			for _, s := range e.sections("brief.md") {
				if s.Event != strand.Scheduled || s.Failed {
					t.Fatalf("brief.md's tie-off holds a %v section (failed %v): %q", s.Event, s.Failed, s.Body)
				}
				dues = append(dues, s.Due)
			}
			return dues
		}

		// A week: one run a day at 07:00, on time.
		stop := watch()
		until(day(7, 12))
		dues := scheduled()
		if len(dues) != 7 {
			t.Fatalf("a week of a daily schedule ran %d times (%v); want 7", len(dues), dues)
		}
		for i, d := range dues {
			if !d.Equal(day(1+i, 7)) {
				t.Errorf("run %d stands for %v; want %v", i, d, day(1+i, 7))
			}
		}
		for _, o := range agent.got() {
			if o.Late != 0 || o.Count != 1 || o.Schedule != "daily 07:00 UTC" {
				t.Errorf("an on-time run was told %+v", o)
			}
		}

		// knotd status says when it runs next.
		st, err := v.Control().Status(context.Background())
		mustDo(t, err)
		if len(st.Schedules) != 1 || st.Schedules[0].Note != "brief.md" || !st.Schedules[0].Next.Equal(day(8, 7)) || st.Schedules[0].Zone != "UTC" {
			t.Errorf("status's schedules = %+v; want brief.md next on the 8th at 07:00 UTC", st.Schedules)
		}

		// Stopped from the 7th at noon to the 9th at noon: one late run
		// for the 8th and the 9th.
		stop()
		until(day(9, 12))
		stop = watch()
		until(day(9, 12).Add(time.Minute))
		if dues := scheduled(); len(dues) != 8 || !dues[7].Equal(day(9, 7)) {
			t.Fatalf("after two days stopped the tie-off's scheduled runs are %v; want one more, for the 9th", dues)
		}
		occs := agent.got()
		if late := occs[len(occs)-1]; late.Count != 2 || !late.First.Equal(day(8, 7)) || !late.Due.Equal(day(9, 7)) || late.Late != 5*time.Hour {
			t.Errorf("the run after the restart was told %+v; want late 5h, for 2 occurrences since the 8th", late)
		}
		until(day(10, 12))
		if dues := scheduled(); len(dues) != 9 || !dues[8].Equal(day(10, 7)) {
			t.Fatalf("the day after the restart the scheduled runs are %v; want one more, for the 10th", dues)
		}

		// Handover: knotd's record of the schedules is lost (another
		// device, or this one's state gone); the tie-off says the 10th
		// fired. Restarted on the 11th at noon: the 11th runs, late, once.
		stop()
		mustDo(t, os.Remove(filepath.Join(e.folder().Dir, schedules.FileName)))
		until(day(11, 12))
		stop = watch()
		until(day(11, 13))
		dues = scheduled()
		if len(dues) != 10 || !dues[9].Equal(day(11, 7)) {
			t.Fatalf("after a handover the scheduled runs are %v; want one more, for the 11th", dues)
		}
		if last := agent.got()[len(agent.got())-1]; last.Count != 1 || last.Late != 5*time.Hour {
			t.Errorf("the run after the handover was told %+v; want late 5h for one occurrence", last)
		}
		stop()
	})
}

// TestOnce_InvalidSchedule: a schedule knotd cannot read is said in the
// log and in knotd status, and the note is otherwise served (its change
// runs as usual).
func TestOnce_InvalidSchedule(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("n.md", "---\nknot_schedule: daily 25:00\n---\n# N\n")
	o, log := e.logged()
	v, err := Open(e.root, o)
	mustDo(t, err)
	t.Cleanup(func() { mustDo(t, v.Close()) })
	sum := e.once(v, false)
	if sum.Ran != 1 || sum.Failed != 0 {
		t.Fatalf("the note with a bad schedule: %+v; want its change run", sum)
	}
	if !strings.Contains(log.String(), "the note's schedule cannot be used") || !strings.Contains(log.String(), "25:00") {
		t.Errorf("the log does not say the schedule cannot be used:\n%s", log.String())
	}
	st, err := v.Control().Status(context.Background())
	mustDo(t, err)
	if len(st.Schedules) != 1 || !strings.Contains(st.Schedules[0].Problem, "knot_schedule") {
		t.Errorf("status's schedules = %+v; want n.md's problem", st.Schedules)
	}
}

// TestOnce_ScheduleRespectsPauseAndModeOff: a due schedule runs through the
// usual queue: a paused note and a note with knot_mode: off do not run on
// it; a third note does, once, late; the pass says the paused note waits.
func TestOnce_ScheduleRespectsPauseAndModeOff(t *testing.T) {
	e := newEnv(t)
	e.onceFresh() // an empty vault, adopted
	const sched = "knot_schedule: daily 07:00 UTC\n"
	s, err := schedule.Parse("daily 07:00 UTC", nil)
	mustDo(t, err)
	before := s.Prev(time.Now()).AddDate(0, 0, -2)
	// Three notes arrive (synced) with tie-offs whose newest Scheduled
	// section is two days old.
	for i, rel := range []string{"paused.md", "off.md", "on.md"} {
		mode := ""
		if rel == "off.md" {
			mode = "knot_mode: off\n"
		}
		e.write(rel, "---\n"+sched+mode+"---\n# "+rel+"\n")
		sec, err := tieoff.Format(tieoff.Section{Event: strand.Scheduled, Strand: rel, Time: before,
			RunID: fmt.Sprintf("0190f3c2-7b1a-7c3d-9e2f-%012d", i), Due: before, Body: "Earlier.\n"})
		mustDo(t, err)
		t2, err := strand.TieOffPath(rel)
		mustDo(t, err)
		mustDo(t, os.WriteFile(e.abs(t2), sec, 0o644))
	}
	v := e.open()
	e.once(v, false) // their changes; the schedules are seen
	_, err = v.Control().Pause(context.Background(), []string{"paused.md"}, "")
	mustDo(t, err)
	count := func(rel string) int { return len(e.sections(rel)) }
	on, paused, off := count("on.md"), count("paused.md"), count("off.md")
	sum := e.once(v, false) // the schedules are due (late)
	if count("on.md") != on+1 || count("paused.md") != paused || count("off.md") != off {
		t.Fatalf("sections after a pass with the schedules due: on %d, paused %d, off %d; want %d, %d, %d (%+v)",
			count("on.md"), count("paused.md"), count("off.md"), on+1, paused, off, sum)
	}
	secs := e.sections("on.md")
	if last := secs[len(secs)-1]; last.Event != strand.Scheduled || !last.Due.Equal(s.Prev(time.Now())) {
		t.Errorf("on.md's new section = %v due %v; want Scheduled for the newest occurrence", last.Event, last.Due)
	}
	if len(sum.Paused) != 1 || sum.Paused[0].Note != "paused.md" {
		t.Errorf("the pass's paused notes = %+v; want paused.md", sum.Paused)
	}
	if sum := e.once(v, false); sum.Ran != 0 {
		t.Errorf("a third pass ran %+v; want nothing", sum.Runs)
	}
}

// TestOnce_RuleSchedule: a rule's schedule: runs the notes under its path
// that set no knot_schedule; the others do not run on it.
func TestOnce_RuleSchedule(t *testing.T) {
	e := newEnv(t)
	e.userConfig("rules:\n  - path: briefs/\n    schedule: daily 07:00 UTC\n")
	e.onceFresh()
	s, err := schedule.Parse("daily 07:00 UTC", nil)
	mustDo(t, err)
	before := s.Prev(time.Now()).AddDate(0, 0, -1)
	for i, rel := range []string{"briefs/a.md", "notes/b.md"} {
		e.write(rel, "# "+rel+"\n")
		sec, err := tieoff.Format(tieoff.Section{Event: strand.Scheduled, Strand: rel, Time: before,
			RunID: fmt.Sprintf("0190f3c2-7b1a-7c3d-9e2f-%012d", i), Due: before, Body: "Earlier.\n"})
		mustDo(t, err)
		t2, err := strand.TieOffPath(rel)
		mustDo(t, err)
		mustDo(t, os.WriteFile(e.abs(t2), sec, 0o644))
	}
	v := e.open()
	e.once(v, false)
	a, b := len(e.sections("briefs/a.md")), len(e.sections("notes/b.md"))
	e.once(v, false)
	if got := e.sections("briefs/a.md"); len(got) != a+1 || got[len(got)-1].Event != strand.Scheduled {
		t.Errorf("briefs/a.md has %d sections after its rule's schedule fell due; want %d, the last Scheduled", len(got), a+1)
	}
	if got := len(e.sections("notes/b.md")); got != b {
		t.Errorf("notes/b.md, under no schedule, has %d sections; want %d", got, b)
	}
}
