package main

import (
	"math"
	"strings"
	"testing"
)

func TestRow_Budgets(t *testing.T) {
	tests := []struct {
		name        string
		r           row
		wantVerdict string
		wantOver    float64
	}{
		{"ratio under", newRow("s", "m", "1").withBase("1", 3.0/2).ratioBudget(2), verdictPass, 0.75},
		{"ratio over", newRow("s", "m", "1").withBase("1", 5.0/2).ratioBudget(2), verdictFail, 1.25},
		{"ratio at the limit fails", newRow("s", "m", "1").withBase("1", 4.0/2).ratioBudget(2), verdictFail, 1},
		{"no baseline fails", newRow("s", "m", "1").ratioBudget(2), verdictFail, math.Inf(1)},
		{"NaN ratio fails", newRow("s", "m", "1").withBase("1", median(ratios([]float64{1}, []float64{0}))).ratioBudget(2), verdictFail, math.Inf(1)},
		{"max under", newRow("s", "m", "1").maxBudget(20, 40, "< 40 MiB"), verdictPass, 0.5},
		{"max over", newRow("s", "m", "1").maxBudget(60, 40, "< 40 MiB"), verdictFail, 1.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.r.Verdict != tt.wantVerdict || tt.r.Over != tt.wantOver {
				t.Errorf("verdict, over = %q, %v; want %q, %v", tt.r.Verdict, tt.r.Over, tt.wantVerdict, tt.wantOver)
			}
		})
	}
	if r := newRow("s", "m", "1").check(false, "exactly once"); r.Verdict != verdictFail {
		t.Errorf("check(false).Verdict = %q; want %q", r.Verdict, verdictFail)
	}
}

func TestWriteTable(t *testing.T) {
	rows := []row{
		newRow("startup", "time a|b", "12.0 ms").withBase("6.00 ms", 2).ratioBudget(2),
		skipRow("peers", "entr", "entr is not installed"),
	}
	var b strings.Builder
	if err := writeTable(&b, rows); err != nil {
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
	rows := []row{
		newRow("a", "m", "1").maxBudget(1, 2, "").profiled("a", 0),
		newRow("b", "m", "1").maxBudget(3, 2, ""), // not profilable
		newRow("c", "m", "1").maxBudget(3, 4, "").profiled("c", 0),
		newRow("d", "m", "1").profiled("d", 0), // no budget
	}
	if got := worst(rows); got != 2 {
		t.Errorf("worst() = %d; want 2", got)
	}
	if got := worst(rows[3:]); got != -1 {
		t.Errorf("worst(no budgets) = %d; want -1", got)
	}
}

func TestRatios(t *testing.T) {
	got := ratios([]float64{4, 9, 1}, []float64{2, 3, 0})
	if len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("ratios([4 9 1], [2 3 0]) = %v; want [2 3] (a zero baseline is left out)", got)
	}
}
