package schedules

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/schedule"
)

func mustParse(t *testing.T, text string) schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(text, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func load(t *testing.T, file string) *Book {
	t.Helper()
	b, err := Load(file, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fired is what a sequence of looks at the Book fired: for each, the due
// time, how many occurrences and whether late.
type fired struct {
	due   time.Time
	count int
	late  bool
}

func due(t *testing.T, b *Book, now time.Time) []fired {
	t.Helper()
	fs, err := b.Due(now)
	if err != nil {
		t.Fatal(err)
	}
	var out []fired
	for _, f := range fs {
		out = append(out, fired{f.Occ.Due, f.Occ.Count, f.Occ.Late > 0})
	}
	return out
}

// TestBook_DailyAcrossAWeek: a daily schedule fires once a day, on time,
// whatever how often the Book is looked at; a new schedule does not fire
// for the past.
func TestBook_DailyAcrossAWeek(t *testing.T) {
	file := filepath.Join(t.TempDir(), FileName)
	b := load(t, file)
	b.Set([]Note{{Rel: "brief.md", Schedule: mustParse(t, "daily 07:00")}})
	start := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC) // after Monday's 07:00
	if err := b.Start(start, func(string) time.Time { return time.Time{} }); err != nil {
		t.Fatal(err)
	}
	var runs []fired
	for now := start; now.Before(start.Add(7 * 24 * time.Hour)); now = now.Add(10 * time.Minute) {
		runs = append(runs, due(t, b, now)...)
	}
	if len(runs) != 7 {
		t.Fatalf("a daily schedule fired %d times in a week: %v; want 7", len(runs), runs)
	}
	for i, r := range runs {
		want := time.Date(2026, 11, 3+i, 7, 0, 0, 0, time.UTC)
		if !r.due.Equal(want) || r.count != 1 || r.late {
			t.Errorf("run %d = %+v; want due %v, one occurrence, on time", i, r, want)
		}
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the Book's file: %v, %v; want mode 0600", info, err)
	}
}

// TestBook_StoppedTwoDays: knotd stopped for two days (the Book loaded
// again from its file) fires once on the restart, late, standing for the
// two occurrences it missed; never twice.
func TestBook_StoppedTwoDays(t *testing.T) {
	file := filepath.Join(t.TempDir(), FileName)
	notes := []Note{{Rel: "brief.md", Schedule: mustParse(t, "daily 07:00")}}
	none := func(string) time.Time { return time.Time{} }
	b := load(t, file)
	b.Set(notes)
	mon := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	if err := b.Start(mon, none); err != nil {
		t.Fatal(err)
	}
	if got := due(t, b, mon.Add(time.Hour)); len(got) != 1 || got[0].late {
		t.Fatalf("Monday 07:00: %+v; want one run, on time", got)
	}
	// Stopped from Monday 08:00 to Wednesday 09:30.
	b = load(t, file)
	b.Set(notes)
	wed := time.Date(2026, 11, 4, 9, 30, 0, 0, time.UTC)
	if err := b.Start(wed, none); err != nil {
		t.Fatal(err)
	}
	got := due(t, b, wed)
	want := fired{time.Date(2026, 11, 4, 7, 0, 0, 0, time.UTC), 2, true}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("restart on Wednesday 09:30: %+v; want one late run for 2 occurrences due %v", got, want.due)
	}
	fs, _ := b.Due(wed) // (recorded: nothing more)
	if len(fs) != 0 {
		t.Fatalf("a second look fired %+v", fs)
	}
	b2 := load(t, file)
	b2.Set(notes)
	if err := b2.Start(wed.Add(time.Minute), none); err != nil {
		t.Fatal(err)
	}
	if got := due(t, b2, wed.Add(time.Minute)); len(got) != 0 {
		t.Fatalf("restarted again: %+v; want nothing (it fired)", got)
	}
	st := b2.Statuses(wed)
	if len(st) != 1 || !st[0].Next.Equal(time.Date(2026, 11, 5, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("Statuses = %+v; want next Thursday 07:00", st)
	}
}

// TestBook_Handover: a device without the Book (its state lost, or another
// device) that starts answering reads the newest occurrence the tie-off
// records: it neither repeats it nor skips the one after.
func TestBook_Handover(t *testing.T) {
	notes := []Note{{Rel: "brief.md", Schedule: mustParse(t, "daily 07:00")}}
	tue := time.Date(2026, 11, 3, 7, 0, 0, 0, time.UTC)
	tieOff := func(rel string) time.Time {
		if rel == "brief.md" {
			return tue // the other device fired Tuesday's
		}
		return time.Time{}
	}
	tests := []struct {
		name string
		now  time.Time
		want []fired
	}{
		{"same day", time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC), nil},
		{"next day, late", time.Date(2026, 11, 4, 8, 0, 0, 0, time.UTC), []fired{{time.Date(2026, 11, 4, 7, 0, 0, 0, time.UTC), 1, true}}},
		{"two days later", time.Date(2026, 11, 5, 8, 0, 0, 0, time.UTC), []fired{{time.Date(2026, 11, 5, 7, 0, 0, 0, time.UTC), 2, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := load(t, filepath.Join(t.TempDir(), FileName))
			b.Set(notes)
			if err := b.Start(tt.now, tieOff); err != nil {
				t.Fatal(err)
			}
			got := due(t, b, tt.now)
			if len(got) != len(tt.want) || len(got) == 1 && got[0] != tt.want[0] {
				t.Fatalf("Due = %+v; want %+v", got, tt.want)
			}
		})
	}
}

// TestBook_DSTWeek: "daily 02:30 Europe/Paris" across the week the clocks
// go forward (2026-03-29: 02:30 does not exist) and the week they go back
// (2026-10-25: 02:30 happens twice) fires once a day.
func TestBook_DSTWeek(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, week := range []time.Time{
		time.Date(2026, 3, 26, 12, 0, 0, 0, paris),
		time.Date(2026, 10, 22, 12, 0, 0, 0, paris),
	} {
		b := load(t, filepath.Join(t.TempDir(), FileName))
		b.Set([]Note{{Rel: "n.md", Schedule: mustParse(t, "daily 02:30 Europe/Paris")}})
		if err := b.Start(week, func(string) time.Time { return time.Time{} }); err != nil {
			t.Fatal(err)
		}
		var runs []fired
		for now := week; now.Before(week.Add(7 * 24 * time.Hour)); now = now.Add(5 * time.Minute) {
			runs = append(runs, due(t, b, now)...)
		}
		if len(runs) != 7 {
			t.Fatalf("week of %v: %d runs %+v; want 7", week, len(runs), runs)
		}
		for i := 1; i < len(runs); i++ {
			if runs[i].late || runs[i].count != 1 {
				t.Errorf("week of %v: run %+v late or for several occurrences", week, runs[i])
			}
			if gap := runs[i].due.Sub(runs[i-1].due); gap < 23*time.Hour || gap > 25*time.Hour {
				t.Errorf("week of %v: %v between runs %v and %v", week, gap, runs[i-1].due, runs[i].due)
			}
		}
	}
}

// TestBook_ChangedScheduleStartsFromNow: a schedule that changes, or is
// removed and added again, does not fire for the past.
func TestBook_ChangedScheduleStartsFromNow(t *testing.T) {
	file := filepath.Join(t.TempDir(), FileName)
	b := load(t, file)
	none := func(string) time.Time { return time.Time{} }
	b.Set([]Note{{Rel: "n.md", Schedule: mustParse(t, "daily 07:00")}})
	mon := time.Date(2026, 11, 2, 6, 0, 0, 0, time.UTC)
	if err := b.Start(mon, none); err != nil {
		t.Fatal(err)
	}
	b.Set([]Note{{Rel: "n.md", Schedule: mustParse(t, "daily 08:00")}})
	if got := due(t, b, mon.Add(3*time.Hour)); len(got) != 0 {
		t.Fatalf("a changed schedule fired %+v for the past", got)
	}
	if got := due(t, b, mon.Add(26*time.Hour)); len(got) != 1 || got[0].late {
		t.Fatalf("Tuesday 08:00: %+v; want one run", got)
	}
	b.Set([]Note{{Rel: "n.md", Problem: "bad"}})
	if got := due(t, b, mon.Add(60*time.Hour)); len(got) != 0 {
		t.Fatalf("a schedule with a problem fired %+v", got)
	}
}
