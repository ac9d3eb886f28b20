// Package budget is the day's budget of a vault (the configuration's
// budget section, docs/design.md): it counts what the runs spend, from the
// day's transcripts and then run by run, and defers the changes that
// would go past it. What it needs of the vault is Host.
package budget

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/transcript"
)

// Host is what the budget asks of its vault, each time it needs it (the
// configuration may be reloaded, a test may change the clock or logger).
type Host interface {
	Now() time.Time        // the clock that says which day it is
	Log() *slog.Logger     // where a deferral is said
	Budget() config.Budget // the budget in force
	Runs() string          // the folder of the vault's transcripts
}

// Budget is the day's budget of a vault: it counts what the runs spend
// and defers the changes that would go past it. Its methods are safe for
// concurrent use.
type Budget struct {
	host  Host
	spend spend
}

// New returns the budget of the vault host.
func New(host Host) *Budget { return &Budget{host: host} }

// spend is what the runs of a day (UTC) spent, for the vault and for each
// note, as their CLIs reported it: counted from the day's transcripts
// when first needed, then run by run. The runs in flight count against
// the caps on runs from the moment the budget lets them go (flight); what
// they spend (dollars, tokens) is known only when they end, so runs
// started together may go past those caps by what they spend. deferred
// holds the notes whose changes wait for the budget.
type spend struct {
	mu       sync.Mutex
	day      string // the UTC date counted; "" until loaded
	vault    transcript.Ledger
	notes    map[string]*transcript.Ledger
	flight   map[string]bool     // strands whose run the budget let go, until it ends
	deferred map[string]Deferral // strand -> why it waits, since when
	said     map[string]bool     // what was said today
}

// Deferral is why a strand's change waits for the budget, and since when.
type Deferral struct {
	Why   string
	Since time.Time
}

// load starts counting the day of now, from its transcripts in runs.
// s.mu is held.
func (s *spend) load(now time.Time, runs string) error {
	day := now.UTC().Format(time.DateOnly)
	if s.day == day {
		return nil
	}
	list, err := transcript.ListSince(runs, now.UTC().Truncate(24*time.Hour))
	if err != nil {
		return err
	}
	s.day, s.vault, s.notes, s.said = day, transcript.Ledger{}, map[string]*transcript.Ledger{}, map[string]bool{}
	for _, r := range list {
		s.count(r.Strand, r)
	}
	return nil
}

// count adds the run r of the strand rel; s.mu is held.
func (s *spend) count(rel string, r transcript.Summary) {
	s.vault.Add(r)
	l := s.notes[rel]
	if l == nil {
		l = &transcript.Ledger{}
		s.notes[rel] = l
	}
	l.Add(r)
}

// over returns why the strand rel may not run now under b, "" when it
// may; s.mu is held, and the day loaded. The runs in flight of other
// strands count as runs.
func (s *spend) over(rel string, b config.Budget) string {
	note := s.notes[rel]
	if note == nil {
		note = &transcript.Ledger{}
	}
	flying := len(s.flight)
	if s.flight[rel] {
		flying-- // its own, let go before it was looked at again
	}
	for _, c := range []struct {
		who    string
		l      *transcript.Ledger
		flying int
		usd    float64
		runs   int
		tok    int64
	}{{"the vault's", &s.vault, flying, b.DayUSD, b.DayRuns, b.DayTokens}, {"this note's", note, 0, b.NoteDayUSD, b.NoteDayRuns, b.NoteDayTokens}} {
		u := c.l.Usage
		switch {
		case c.usd > 0 && u.CostUSD >= c.usd:
			return fmt.Sprintf("%s budget of $%.2f a day is spent ($%.4f reported today, UTC)", c.who, c.usd, u.CostUSD)
		case c.runs > 0 && c.l.Runs+c.flying >= c.runs:
			if c.flying > 0 {
				return fmt.Sprintf("%s budget of %d runs a day is spent (%d today, UTC, %d of them in progress)", c.who, c.runs, c.l.Runs+c.flying, c.flying)
			}
			return fmt.Sprintf("%s budget of %d runs a day is spent (%d today, UTC)", c.who, c.runs, c.l.Runs)
		case c.tok > 0 && u.InputTokens+u.OutputTokens >= c.tok:
			return fmt.Sprintf("%s budget of %d tokens a day is spent (%d today, UTC)", c.who, c.tok, u.InputTokens+u.OutputTokens)
		}
	}
	return ""
}

// Allows reports whether the strand rel may run now under the
// budget in force (a run by hand always may); when it may, its run counts
// against the caps on runs from now until it ends (landed). When it may
// not, the change is deferred: kept for when the budget allows (the next
// day, a raised budget, a run by hand), and said once a day for each cap,
// not at every save.
func (bu *Budget) Allows(rel string, byHand bool) (ok bool, why string, err error) {
	b := bu.host.Budget()
	if b == (config.Budget{RunUSD: b.RunUSD}) {
		return true, "", nil // no daily cap
	}
	s := &bu.spend
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(bu.host.Now(), bu.host.Runs()); err != nil {
		if byHand {
			return true, "", nil // a run by hand goes, counted or not
		}
		return false, "", fmt.Errorf("vault: count today's runs for the budget: %w", err)
	}
	if !byHand {
		why = s.over(rel, b)
	}
	if why == "" {
		if s.flight == nil {
			s.flight = map[string]bool{}
		}
		s.flight[rel] = true
		return true, "", nil
	}
	if s.deferred == nil {
		s.deferred = map[string]Deferral{}
	}
	d, waiting := s.deferred[rel]
	if !waiting {
		d.Since = bu.host.Now().UTC()
	}
	d.Why = why
	s.deferred[rel] = d
	limit, _, _ := strings.Cut(why, " is spent")
	if !s.said[limit] {
		s.said[limit] = true
		bu.host.Log().Warn("a change waits for the budget: "+why+"; it runs when the budget allows (tomorrow, UTC), or now with knotd run", "strand", rel)
	}
	return false, why, nil
}

// WouldDefer is Allows for a dry run: why the change of the
// strand rel would wait for the budget ("" if it would not), with nothing
// deferred or said.
func (bu *Budget) WouldDefer(rel string) (string, error) {
	b := bu.host.Budget()
	if b == (config.Budget{RunUSD: b.RunUSD}) {
		return "", nil // no daily cap
	}
	s := &bu.spend
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(bu.host.Now(), bu.host.Runs()); err != nil {
		return "", fmt.Errorf("vault: count today's runs for the budget: %w", err)
	}
	return s.over(rel, b), nil
}

// Landed is the end of the work on the strand rel: its run (ran) counts
// in the day's spend instead of in flight, and a strand that ran no
// longer waits for the budget.
func (bu *Budget) Landed(rel string, ran bool, usage *agentrun.Usage) {
	s := &bu.spend
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.flight, rel)
	if !ran {
		return
	}
	delete(s.deferred, rel)
	if s.day != bu.host.Now().UTC().Format(time.DateOnly) {
		return // not loaded, or another day: the transcripts count it when it is
	}
	r := transcript.Summary{Finished: true, Strand: rel}
	if usage != nil {
		u := transcript.Usage(*usage)
		r.Usage = &u
	}
	s.count(rel, r)
}

// AllowedDeferred returns, and forgets, the deferred strands the budget
// allows now (a new day, a raised budget).
func (bu *Budget) AllowedDeferred() []string {
	s := &bu.spend
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.deferred) == 0 {
		return nil
	}
	if err := s.load(bu.host.Now(), bu.host.Runs()); err != nil {
		bu.host.Log().Warn("cannot count today's runs for the budget; the changes that wait for it wait on", "err", err)
		return nil
	}
	b := bu.host.Budget()
	var out []string
	for rel := range s.deferred {
		if s.over(rel, b) == "" {
			out = append(out, rel)
			delete(s.deferred, rel)
		}
	}
	slices.Sort(out)
	return out
}

// Deferred returns the strands waiting for the budget, with why as
// the day's counts say it now, and since when they wait.
func (bu *Budget) Deferred() map[string]Deferral {
	s := &bu.spend
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]Deferral, len(s.deferred))
	loaded := s.load(bu.host.Now(), bu.host.Runs()) == nil
	b := bu.host.Budget()
	for rel, d := range s.deferred {
		if loaded {
			if d.Why = s.over(rel, b); d.Why == "" {
				d.Why = "the budget allows it again: it runs at knotd's next check"
			}
		}
		out[rel] = d
	}
	return out
}
