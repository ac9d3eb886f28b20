package vault

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/state"
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
			s, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
			mustDo(t, err)
			defer func() { mustDo(t, s.Close()) }()
			ran := func(rel string, at time.Time, failed bool) string {
				t.Helper()
				why, err := breakerRan(s, rel, at, failed, tt.c)
				mustDo(t, err)
				return why
			}
			for i, r := range tt.runs {
				why := ran("a.md", t0.Add(r.at), r.failed)
				if (why == "") != (r.trips == "") || !strings.Contains(why, r.trips) {
					t.Fatalf("run %d: ran = %q; want %q", i, why, r.trips)
				}
			}
			if why := ran("b.md", t0, true); why != "" {
				t.Errorf("another strand's first run tripped: %q", why)
			}
			mustDo(t, s.Update(func(tx *state.Tx) error { return tx.ForgetBreaker("a.md") }))
			if why := ran("a.md", t0.Add(24*time.Hour), true); why != "" && tt.c.Failures > 1 {
				t.Errorf("the first run after a reset tripped: %q", why)
			}
		})
	}
}

// TestBreakers_KeepOnlyWhatTheWindowNeeds: a strand's stored counts hold
// its runs within the window, and no more of them than trip the breaker,
// however many runs it made.
func TestBreakers_KeepOnlyWhatTheWindowNeeds(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	c := config.Breakers{Runs: 3, Within: 10 * time.Minute}
	var b state.Breaker
	for i := range 100 {
		b, _ = countRun(b, t0.Add(time.Duration(i)*time.Second), false, c)
		if len(b.Runs) > c.Runs+1 {
			t.Fatalf("after %d runs: %d kept; want at most %d", i+1, len(b.Runs), c.Runs+1)
		}
	}
	b, _ = countRun(b, t0.Add(time.Hour), false, c)
	if len(b.Runs) != 1 {
		t.Errorf("a run after an hour keeps %d runs; want itself only", len(b.Runs))
	}
}

// TestBreakers_CountAcrossRestarts: a note that loops across restarts
// still trips its breaker: the counts are kept in the state store, not
// in the running knotd (each pass here is a knotd started afresh on the
// same state directory).
func TestBreakers_CountAcrossRestarts(t *testing.T) {
	e := newEnv(t)
	e.userConfig("default_agent: fake\nbreakers: {runs: 2, within: 1h, failures: 0}\nagents:\n" + e.fakeAgentYAML("fake", "", fakeagent.Echo))
	e.onceFresh() // first contact: the vault is adopted
	for i := range 3 {
		e.write("a.md", fmt.Sprintf("# A\n\nedit %d\n", i))
		if sum := e.onceFresh(); sum.Ran != 1 {
			t.Fatalf("pass %d ran %d; want the edit", i, sum.Ran)
		}
	}
	s, err := state.Open(e.statePath())
	mustDo(t, err)
	p, paused, err := s.PausedOf("a.md")
	mustDo(t, s.Close())
	mustDo(t, err)
	if !paused || !strings.Contains(p.Why, "ran 3 times within 1h0m0s") {
		t.Fatalf("after three runs in three starts: paused %v (%q); want the breaker tripped", paused, p.Why)
	}
	e.write("a.md", "# A\n\nedit 4\n")
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a paused note ran %d times", sum.Ran)
	}
}
