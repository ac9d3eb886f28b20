package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Verdicts of a row.
const (
	verdictPass = "pass"
	verdictFail = "FAIL"
	verdictInfo = "info" // a figure without a budget
	verdictSkip = "skipped"
)

// row is one line of the results table: one metric of one scenario, with
// knotd's figure, the baseline or peer figure measured in the same run,
// their ratio, the budget and whether it was met.
type row struct {
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

// newRow starts a row with knotd's figure and no baseline or budget.
func newRow(scenario, metric, knotd string) row {
	return row{Scenario: scenario, Metric: metric, Knotd: knotd, Ratio: math.NaN(), Over: math.NaN(), Verdict: verdictInfo}
}

// skipRow is a row for something that could not be measured, and why.
func skipRow(scenario, metric, why string) row {
	r := newRow(scenario, metric, "—")
	r.Verdict, r.Budget = verdictSkip, why
	return r
}

// withBase sets the baseline figure and the ratio knotd/base (the median
// of the ratios of each run, see ratios).
func (r row) withBase(base string, ratio float64) row {
	r.Base, r.Ratio = base, ratio
	return r
}

// ratios returns a[i]/b[i] for each run i: ratios are taken within a run,
// where knotd and its baseline met the same machine load.
func ratios(a, b []float64) []float64 {
	out := make([]float64, 0, len(a))
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			out = append(out, a[i]/b[i])
		}
	}
	return out
}

// ratioBudget requires the ratio to be below limit.
func (r row) ratioBudget(limit float64) row {
	r.Budget = "< " + strconv.FormatFloat(limit, 'f', -1, 64) + "×"
	return r.judge(r.Ratio, limit)
}

// maxBudget requires value to be below limit (in the row's unit, shown as
// budget).
func (r row) maxBudget(value, limit float64, budget string) row {
	r.Budget = budget
	return r.judge(value, limit)
}

func (r row) judge(value, limit float64) row {
	if math.IsNaN(value) {
		r.Verdict = verdictFail
		r.Over = math.Inf(1)
		return r
	}
	r.Over = value / limit
	r.Verdict = verdictPass
	if value >= limit {
		r.Verdict = verdictFail
	}
	return r
}

// check sets a pass/fail verdict for an exact requirement.
func (r row) check(ok bool, budget string) row {
	r.Budget = budget
	r.Verdict = verdictPass
	if !ok {
		r.Verdict = verdictFail
	}
	return r
}

// profiled marks the scenario, and the vault size, that explain the row.
func (r row) profiled(scenario string, size int) row {
	r.Profile, r.ProfileSize = scenario, size
	return r
}

// writeTable prints rows as a Markdown table.
func writeTable(w io.Writer, rows []row) error {
	var b strings.Builder
	b.WriteString("| scenario | metric | knotd | baseline / peer | ratio | budget | verdict |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | --- | --- |\n")
	for _, r := range rows {
		ratio := ""
		if !math.IsNaN(r.Ratio) {
			ratio = formatNum(r.Ratio) + "×"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n",
			cell(r.Scenario), cell(r.Metric), cell(r.Knotd), cell(r.Base), ratio, cell(r.Budget), r.Verdict)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

// worst returns the index of the row furthest from (or over) its budget
// among those that can be profiled, or -1.
func worst(rows []row) int {
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
