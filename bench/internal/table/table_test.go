package table

import (
	"math"
	"strings"
	"testing"

	"github.com/knotd/knotd/bench/internal/stats"
)

func TestRow_Budgets(t *testing.T) {
	tests := []struct {
		name        string
		r           Row
		wantVerdict string
		wantOver    float64
	}{
		{"ratio under", NewRow("s", "m", "1").WithBase("1", 3.0/2).RatioBudget(2), VerdictPass, 0.75},
		{"ratio over", NewRow("s", "m", "1").WithBase("1", 5.0/2).RatioBudget(2), VerdictFail, 1.25},
		{"ratio at the limit fails", NewRow("s", "m", "1").WithBase("1", 4.0/2).RatioBudget(2), VerdictFail, 1},
		{"no baseline fails", NewRow("s", "m", "1").RatioBudget(2), VerdictFail, math.Inf(1)},
		{"NaN ratio fails", NewRow("s", "m", "1").WithBase("1", stats.Median(Ratios([]float64{1}, []float64{0}))).RatioBudget(2), VerdictFail, math.Inf(1)},
		{"max under", NewRow("s", "m", "1").MaxBudget(20, 40, "< 40 MiB"), VerdictPass, 0.5},
		{"max over", NewRow("s", "m", "1").MaxBudget(60, 40, "< 40 MiB"), VerdictFail, 1.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.r.Verdict != tt.wantVerdict || tt.r.Over != tt.wantOver {
				t.Errorf("verdict, over = %q, %v; want %q, %v", tt.r.Verdict, tt.r.Over, tt.wantVerdict, tt.wantOver)
			}
		})
	}
	if r := NewRow("s", "m", "1").Check(false, "exactly once"); r.Verdict != VerdictFail {
		t.Errorf("check(false).Verdict = %q; want %q", r.Verdict, VerdictFail)
	}
}

func TestWriteTable(t *testing.T) {
	rows := []Row{
		NewRow("startup", "time a|b", "12.0 ms").WithBase("6.00 ms", 2).RatioBudget(2),
		SkipRow("peers", "entr", "entr is not installed"),
	}
	var b strings.Builder
	if err := Write(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := "| scenario | metric | knotd | baseline / peer | ratio | budget | verdict |\n" +
		"| --- | --- | ---: | ---: | ---: | --- | --- |\n" +
		"| startup | time a\\|b | 12.0 ms | 6.00 ms | 2.00× | < 2× | FAIL |\n" +
		"| peers | entr | — |  |  | entr is not installed | skipped |\n"
	if got := b.String(); got != want {
		t.Errorf("writeTable() =\n%s\nwant\n%s", got, want)
	}
}

func TestWorst(t *testing.T) {
	rows := []Row{
		NewRow("a", "m", "1").MaxBudget(1, 2, "").Profiled("a", 0),
		NewRow("b", "m", "1").MaxBudget(3, 2, ""), // not profilable
		NewRow("c", "m", "1").MaxBudget(3, 4, "").Profiled("c", 0),
		NewRow("d", "m", "1").Profiled("d", 0), // no budget
	}
	if got := Worst(rows); got != 2 {
		t.Errorf("worst() = %d; want 2", got)
	}
	if got := Worst(rows[3:]); got != -1 {
		t.Errorf("worst(no budgets) = %d; want -1", got)
	}
}

func TestRatios(t *testing.T) {
	got := Ratios([]float64{4, 9, 1}, []float64{2, 3, 0})
	if len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("ratios([4 9 1], [2 3 0]) = %v; want [2 3] (a zero baseline is left out)", got)
	}
}
