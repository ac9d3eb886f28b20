package transcript

import (
	"cmp"
	"path"
	"slices"
	"time"
)

// Ledger is the token use and cost of a set of runs, as their CLIs
// reported them: the sum of what each run.finished says. Priced counts
// the runs whose CLI reported a cost; the cost of the others is not
// known, and never made up. Metered counts the runs whose CLI reported
// tokens: with none, the ledger's tokens are not known (not zero).
type Ledger struct {
	Runs    int   `json:"runs"`
	Priced  int   `json:"priced_runs"`
	Metered int   `json:"metered_runs"`
	Usage   Usage `json:"usage"`
}

// Add counts the finished run s in l.
func (l *Ledger) Add(s Summary) {
	if !s.Finished {
		return
	}
	l.Runs++
	if s.Usage == nil {
		return
	}
	l.Usage.Add(*s.Usage)
	if s.Usage.CostUSD > 0 {
		l.Priced++
	}
	if u := s.Usage; u.InputTokens != 0 || u.OutputTokens != 0 || u.CacheReadTokens != 0 || u.CacheWriteTokens != 0 {
		l.Metered++
	}
}

// LedgerRow is the ledger of the runs that share a key: a day, an agent, a
// folder or a note.
type LedgerRow struct {
	Key string `json:"key"`
	Ledger
}

// Ledgers groups the finished runs by the keys key gives each, and returns
// the groups in key order.
func Ledgers(runs []Summary, key func(Summary) string) []LedgerRow {
	by := map[string]*Ledger{}
	for _, s := range runs {
		if !s.Finished {
			continue
		}
		k := key(s)
		l := by[k]
		if l == nil {
			l = &Ledger{}
			by[k] = l
		}
		l.Add(s)
	}
	rows := make([]LedgerRow, 0, len(by))
	for k, l := range by {
		rows = append(rows, LedgerRow{Key: k, Ledger: *l})
	}
	slices.SortFunc(rows, func(a, b LedgerRow) int { return cmp.Compare(a.Key, b.Key) })
	return rows
}

// The keys knotd runs --cost groups runs by.
var (
	ByDay    = func(s Summary) string { return s.Time.UTC().Format(time.DateOnly) }
	ByAgent  = func(s Summary) string { return s.Agent }
	ByNote   = func(s Summary) string { return s.Strand }
	ByFolder = func(s Summary) string {
		if d := path.Dir(s.Strand); d != "." {
			return d + "/"
		}
		return "(top level)"
	}
)
