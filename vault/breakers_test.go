package vault

import (
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/config"
)

func TestBreakers(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	c := config.Breakers{Runs: 3, Within: 10 * time.Minute, Failures: 2}
	type run struct {
		at     time.Duration
		failed bool
		trips  string // what the reason says; "" when it must not trip
	}
	tests := []struct {
		name string
		c    config.Breakers
		runs []run
	}{
		{"three runs within the window are allowed, the fourth trips", c, []run{{0, false, ""}, {time.Minute, false, ""}, {2 * time.Minute, false, ""}, {3 * time.Minute, false, "ran 4 times within 10m0s"}}},
		{"runs spread over more than the window never trip", c, []run{{0, false, ""}, {6 * time.Minute, false, ""}, {12 * time.Minute, false, ""}, {18 * time.Minute, false, ""}, {24 * time.Minute, false, ""}}},
		{"two failures in a row trip", c, []run{{0, true, ""}, {time.Hour, true, "last 2 runs failed"}}},
		{"a success in between starts the count again", c, []run{{0, true, ""}, {time.Hour, false, ""}, {2 * time.Hour, true, ""}}},
		{"off", config.Breakers{}, []run{{0, true, ""}, {0, true, ""}, {0, true, ""}, {0, true, ""}, {0, true, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b breakers
			for i, r := range tt.runs {
				why := b.ran("a.md", t0.Add(r.at), r.failed, tt.c)
				if (why == "") != (r.trips == "") || !strings.Contains(why, r.trips) {
					t.Fatalf("run %d: ran = %q; want %q", i, why, r.trips)
				}
			}
			if why := b.ran("b.md", t0, true, tt.c); why != "" {
				t.Errorf("another strand's first run tripped: %q", why)
			}
			b.reset("a.md")
			if why := b.ran("a.md", t0.Add(24*time.Hour), true, tt.c); why != "" && tt.c.Failures > 1 {
				t.Errorf("the first run after a reset tripped: %q", why)
			}
		})
	}
}
