// Package table is the bench's results: one row per metric of a scenario,
// with knotd's figure, its baseline or peer, their ratio, the budget and
// the verdict, printed as one Markdown table; and which row is furthest
// from its budget (the one profiled).
package table

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/knotd/knotd/bench/internal/stats"
)

// Verdicts of a row.
const (
	VerdictPass = "pass"
	VerdictFail = "FAIL"
	VerdictInfo = "info" // a figure without a budget
	VerdictSkip = "skipped"
)

// Row is one line of the results table: one metric of one scenario, with
// knotd's figure, the baseline or peer figure measured in the same run,
// their ratio, the budget and whether it was met.
type Row struct {
	Scenario string
	Metric   string
	Knotd    string
	Base     string
	Ratio    float64 // knotd / base; NaN when there is no base
	Budget   string
	Verdict  string
	// Over is how far the figure is from its budget (figure / limit, so
	// above 1 fails); NaN when the row has no numeric budget. The row with
	// the highest Over is "the worst figure", the one profiled.
	Over float64
	// Profile names the scenario to run again under the profiler to
	// explain this row ("" for rows that cannot be profiled that way),
	// and ProfileSize the vault size it was measured on (0: any).
	Profile     string
	ProfileSize int
}

// NewRow starts a row with knotd's figure and no baseline or budget.
func NewRow(scenario, metric, knotd string) Row {
	return Row{Scenario: scenario, Metric: metric, Knotd: knotd, Ratio: math.NaN(), Over: math.NaN(), Verdict: VerdictInfo}
}

// SkipRow is a row for something that could not be measured, and why.
func SkipRow(scenario, metric, why string) Row {
	r := NewRow(scenario, metric, "—")
	r.Verdict, r.Budget = VerdictSkip, why
	return r
}

// WithBase sets the baseline figure and the ratio knotd/base (the median
// of the ratios of each run, see Ratios).
func (r Row) WithBase(base string, ratio float64) Row {
	r.Base, r.Ratio = base, ratio
	return r
}

// Ratios returns a[i]/b[i] for each run i: ratios are taken within a run,
// where knotd and its baseline met the same machine load.
func Ratios(a, b []float64) []float64 {
	out := make([]float64, 0, len(a))
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// RatioBudget requires the ratio to be below limit.
func (r Row) RatioBudget(limit float64) Row {
	r.Budget = "< " + strconv.FormatFloat(limit, 'f', -1, 64) + "×"
	return r.judge(r.Ratio, limit)
}

// MaxBudget requires value to be below limit (in the row's unit, shown as
// budget).
func (r Row) MaxBudget(value, limit float64, budget string) Row {
	r.Budget = budget
	return r.judge(value, limit)
}

func (r Row) judge(value, limit float64) Row {
	if math.IsNaN(value) {
		r.Verdict = VerdictFail
		r.Over = math.Inf(1)
		return r
	}
	r.Over = value / limit
	r.Verdict = VerdictPass
	if value >= limit {
		r.Verdict = VerdictFail
	}
	return r
}

// Check sets a pass/fail verdict for an exact requirement.
func (r Row) Check(ok bool, budget string) Row {
	r.Budget = budget
	r.Verdict = VerdictPass
	if !ok {
		r.Verdict = VerdictFail
	}
	return r
}

// Profiled marks the scenario, and the vault size, that explain the row.
func (r Row) Profiled(scenario string, size int) Row {
	r.Profile, r.ProfileSize = scenario, size
	return r
}

// Write prints rows as a Markdown table.
func Write(w io.Writer, rows []Row) error {
	var b strings.Builder
	b.WriteString("| scenario | metric | knotd | baseline / peer | ratio | budget | verdict |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | --- | --- |\n")
	for _, r := range rows {
		ratio := ""
		if !math.IsNaN(r.Ratio) {
			ratio = stats.Format(r.Ratio) + "×"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			Cell(r.Scenario), Cell(r.Metric), Cell(r.Knotd), Cell(r.Base), ratio, Cell(r.Budget), r.Verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Cell makes s safe inside a Markdown table cell.
func Cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// Worst returns the index of the row furthest from (or over) its budget
// among those that can be profiled, or -1.
func Worst(rows []Row) int {
	best, idx := math.Inf(-1), -1
	for i, r := range rows {
		if r.Profile == "" || math.IsNaN(r.Over) {
			continue
		}
		if r.Over > best {
			best, idx = r.Over, i
		}
	}
	return idx
}

// FirstLine returns the first line of s: what a cell shows of an error.
func FirstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
