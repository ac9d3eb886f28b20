package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func at(t testing.TB, loc *time.Location, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParse_Errors(t *testing.T) {
	for _, text := range []string{
		"", "   ", "daily", "daily 7", "daily 24:00", "daily 07:60", "daily 07:0", "funday 07:00",
		"weekly", "weekly 07:00", "every", "every 30s", "every 40d", "every 90s",
		"cron 0 7 * *", "cron 60 * * * *", "cron * 24 * * *", "cron * * 0 * *", "cron * * * 13 *",
		"cron * * * * 8", "cron 5-1 * * * *", "cron */0 * * * *", "daily 07:00 Mars/Olympus",
		"Europe/Paris", "daily 07:00,19:30", "daily 13pm", strings.Repeat("x", MaxLen+1),
	} {
		if _, err := Parse(text, time.UTC); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v; want ErrInvalid", text, err)
		}
	}
}

// TestNext: the occurrences after an instant, for each form, in the
// schedule's zone.
func TestNext(t *testing.T) {
	paris := mustLoc(t, "Europe/Paris")
	for _, tt := range []struct {
		text, from string
		want       []string // Paris wall clock
	}{
		{"daily 07:00", "2026-11-23 06:59", []string{"2026-11-23 07:00", "2026-11-24 07:00", "2026-11-25 07:00"}},
		{"every day at 07:00", "2026-11-23 07:00", []string{"2026-11-24 07:00", "2026-11-25 07:00"}},
		{"daily 07:00,19:00", "2026-11-23 08:00", []string{"2026-11-23 19:00", "2026-11-24 07:00", "2026-11-24 19:00"}},
		{"daily 7:15am", "2026-11-23 08:00", []string{"2026-11-24 07:15"}},
		{"daily 6:30pm", "2026-11-23 08:00", []string{"2026-11-23 18:30"}},
		{"weekdays 08:30", "2026-11-27 09:00", []string{"2026-11-30 08:30", "2026-12-01 08:30"}}, // Friday → Monday
		{"every weekday at 08:30", "2026-11-28 09:00", []string{"2026-11-30 08:30"}},
		{"weekends 10:00", "2026-11-23 00:00", []string{"2026-11-28 10:00", "2026-11-29 10:00", "2026-12-05 10:00"}},
		{"mon,thu 18:00", "2026-11-23 18:00", []string{"2026-11-26 18:00", "2026-11-30 18:00"}},
		{"every monday at 9:00", "2026-11-23 09:00", []string{"2026-11-30 09:00"}},
		{"weekly fri 17:00", "2026-11-23 00:00", []string{"2026-11-27 17:00", "2026-12-04 17:00"}},
		{"Weekly FRI 17:00", "2026-11-23 00:00", []string{"2026-11-27 17:00"}},
		{"every 4h", "2026-11-23 05:10", []string{"2026-11-23 08:00", "2026-11-23 12:00"}},
		{"every 15m", "2026-11-23 05:10", []string{"2026-11-23 05:15", "2026-11-23 05:30"}},
		{"cron 0 7 * * 1-5", "2026-11-27 07:00", []string{"2026-11-30 07:00"}},
		{"cron */20 9-10 * * *", "2026-11-23 09:45", []string{"2026-11-23 10:00", "2026-11-23 10:20", "2026-11-23 10:40", "2026-11-24 09:00"}},
		{"cron 0 12 1 * *", "2026-11-23 00:00", []string{"2026-12-01 12:00", "2027-01-01 12:00"}},
		{"cron 0 12 13 * fri", "2026-11-01 00:00", []string{"2026-11-06 12:00", "2026-11-13 12:00", "2026-11-20 12:00"}}, // either matches
		{"cron 0 0 29 feb *", "2026-03-01 00:00", []string{"2028-02-29 00:00"}},
		{"cron 30 8 * jan-mar sun", "2026-11-23 00:00", []string{"2027-01-03 08:30"}},
		{"cron 0 9 * * 7", "2026-11-23 00:00", []string{"2026-11-29 09:00"}}, // 7 is Sunday
	} {
		t.Run(tt.text, func(t *testing.T) {
			s, err := Parse(tt.text, paris)
			if err != nil {
				t.Fatal(err)
			}
			cur := at(t, paris, tt.from)
			for i, w := range tt.want {
				cur = s.Next(cur)
				if got := cur.In(paris).Format("2006-01-02 15:04"); got != w {
					t.Fatalf("occurrence %d = %s; want %s", i+1, got, w)
				}
				if p := s.Prev(cur); !p.Equal(cur) {
					t.Fatalf("Prev(%v) = %v; want itself", cur, p)
				}
			}
		})
	}
}

// TestNext_ZoneInText: a zone named in the schedule wins over the local one.
func TestNext_ZoneInText(t *testing.T) {
	s, err := Parse("daily 07:00 America/New_York", mustLoc(t, "Europe/Paris"))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Next(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("Next = %v; want %v", got, want)
	}
	if u, _ := Parse("daily 07:00 utc", time.Local); u.Location() != time.UTC {
		t.Fatalf("utc: location %v", u.Location())
	}
}

// TestNext_DST: across daylight-saving changes a wall-clock schedule keeps
// its wall clock; a time the clock skips falls due at the end of the gap,
// a time it shows twice falls due once.
func TestNext_DST(t *testing.T) {
	ny := mustLoc(t, "America/New_York") // 2026-03-08 02:00 → 03:00; 2026-11-01 02:00 → 01:00
	paris := mustLoc(t, "Europe/Paris")  // 2026-03-29 02:00 → 03:00; 2026-10-25 03:00 → 02:00
	utc := func(s string) string { return s }
	for _, tt := range []struct {
		name, text string
		loc        *time.Location
		from       time.Time
		want       []string // UTC
	}{
		{"daily across spring forward", "daily 07:00", paris, time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC),
			[]string{utc("2026-03-28T06:00:00Z"), "2026-03-29T05:00:00Z", "2026-03-30T05:00:00Z"}},
		{"daily across fall back", "daily 07:00", paris, time.Date(2026, 10, 24, 0, 0, 0, 0, time.UTC),
			[]string{"2026-10-24T05:00:00Z", "2026-10-25T06:00:00Z"}},
		{"skipped time falls due at the gap's end", "daily 02:30", ny, time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC),
			[]string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}}, // 03:00 EDT, then 02:30 EDT
		{"repeated time falls due once", "daily 01:30", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC),
			[]string{"2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"}}, // 01:30 EDT only, then 01:30 EST
		{"every 30m through the repeated hour", "every 30m", ny, time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC),
			[]string{"2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z", "2026-11-01T07:00:00Z"}}, // 01:30 EDT, 01:00 EST, 01:30 EST, 02:00 EST
		{"every 6h across spring forward", "every 6h", ny, time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC),
			[]string{"2026-03-08T05:00:00Z", "2026-03-08T10:00:00Z", "2026-03-08T16:00:00Z"}}, // 00:00 EST, 06:00 EDT, 12:00 EDT
		{"every 90m on the epoch", "every 90m", ny, time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC),
			[]string{"2026-11-01T06:00:00Z", "2026-11-01T07:30:00Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.text, tt.loc)
			if err != nil {
				t.Fatal(err)
			}
			cur := tt.from
			for i, w := range tt.want {
				cur = s.Next(cur)
				if got := cur.UTC().Format(time.RFC3339); got != w {
					t.Fatalf("occurrence %d = %s (%s); want %s", i+1, got, cur.In(tt.loc), w)
				}
			}
		})
	}
}

// TestMissed: a week of a daily schedule, with knotd stopped for two days:
// the occurrences missed are counted, and the latest is the one to run.
func TestMissed(t *testing.T) {
	paris := mustLoc(t, "Europe/Paris")
	s, err := Parse("daily 07:00", paris)
	if err != nil {
		t.Fatal(err)
	}
	last := at(t, paris, "2026-11-23 07:00")
	for _, tt := range []struct {
		now           string
		n             int
		first, latest string
	}{
		{"2026-11-23 20:00", 0, "", ""},
		{"2026-11-24 07:00", 1, "2026-11-24 07:00", "2026-11-24 07:00"},
		{"2026-11-25 09:12", 2, "2026-11-24 07:00", "2026-11-25 07:00"},
		{"2026-11-30 06:59", 6, "2026-11-24 07:00", "2026-11-29 07:00"},
	} {
		n, first, latest := s.Missed(last, at(t, paris, tt.now), 100)
		f := func(v time.Time) string {
			if v.IsZero() {
				return ""
			}
			return v.In(paris).Format("2006-01-02 15:04")
		}
		if n != tt.n || f(first) != tt.first || f(latest) != tt.latest {
			t.Errorf("Missed(…, %s) = %d, %s, %s; want %d, %s, %s", tt.now, n, f(first), f(latest), tt.n, tt.first, tt.latest)
		}
	}
	// The limit bounds the count, never the latest.
	n, _, latest := s.Missed(last, at(t, paris, "2027-11-23 08:00"), 10)
	if n != 10 || latest.In(paris).Format("2006-01-02 15:04") != "2027-11-23 07:00" {
		t.Fatalf("limited: %d, %v", n, latest)
	}
}

// TestNext_Never: a cron expression that matches no day never falls due.
func TestNext_Never(t *testing.T) {
	s, err := Parse("cron 0 0 30 feb *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
		t.Fatalf("Next = %v; want none", got)
	}
	if got := s.Prev(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
		t.Fatalf("Prev = %v; want none", got)
	}
}

// FuzzParse: parsing never panics; a schedule that parses has occurrences
// that move forward, and Prev finds each one again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"daily 07:00", "weekdays 8:30am", "mon,thu 18:00 Europe/Paris", "every 4h", "every 90m", "cron */7 1-5 * * mon-fri", "cron 0 2 * * * America/New_York"} {
		f.Add(s, int64(1795000000))
	}
	f.Fuzz(func(t *testing.T, text string, unix int64) {
		s, err := Parse(text, time.UTC)
		if err != nil {
			return
		}
		from := time.Unix(unix%(1<<33), 0)
		next := s.Next(from)
		if next.IsZero() {
			return
		}
		if !next.After(from) {
			t.Fatalf("%q: Next(%v) = %v, not after", text, from, next)
		}
		if p := s.Prev(next); !p.Equal(next) {
			t.Fatalf("%q: Prev(Next(%v)) = %v; want %v", text, from, p, next)
		}
		if p := s.Prev(next.Add(-time.Second)); !p.IsZero() && !p.Before(next) {
			t.Fatalf("%q: Prev before %v = %v", text, next, p)
		}
	})
}
