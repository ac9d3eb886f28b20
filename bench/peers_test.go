package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/knotd/knotd/bench/internal/agentruns"
	"github.com/knotd/knotd/bench/internal/edits"
)

func TestPatternTable(t *testing.T) {
	tools := []tool{{name: "knotd"}, {name: "loop"}}
	figs := [][]peerFigures{
		{{byPattern: map[string][2]int{"truncate+write (VS Code)": {5, 5}}}},
		{{byPattern: map[string][2]int{"truncate+write (VS Code)": {7, 5}, "touch": {2, 0}}}},
	}
	lines := patternTable("7 peers", tools, figs)
	if len(lines) != 3+len(edits.Saves(0)) {
		t.Fatalf("patternTable: %d lines; want a blank line, a header, a rule and one per pattern:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if want := "| 7 peers: agent runs per save pattern | expected | knotd | loop |"; lines[1] != want {
		t.Errorf("header = %q; want %q", lines[1], want)
	}
	if want := "| truncate+write (VS Code) | 5 | 5 | 7 |"; lines[3] != want {
		t.Errorf("first row = %q; want %q", lines[3], want)
	}
	if want := "| touch | 0 | 0 | 2 |"; lines[len(lines)-1] != want {
		t.Errorf("last row = %q; want %q", lines[len(lines)-1], want)
	}
}

func TestProbeOf(t *testing.T) {
	all := []agentruns.Stamp{{Strand: "a.md"}, {Strand: "bench-probe-3.md"}}
	if got := probeOf(all); got != "bench-probe-3.md" {
		t.Errorf("probeOf = %q; want bench-probe-3.md", got)
	}
	if got := probeOf(all[:1]); got != "" {
		t.Errorf("probeOf(no probe) = %q; want none", got)
	}
}

func TestTieoffRuns_CountsSectionsPerStrand(t *testing.T) {
	root := t.TempDir()
	for path, n := range map[string]int{"a/plan.tieoff.md": 3, "b.tieoff.md": 1, ".knot/x.tieoff.md": 9} {
		abs := filepath.Join(root, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeTieOff(abs, n); err != nil {
			t.Fatal(err)
		}
	}
	got, err := agentruns.InTieOffs(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"a/plan.md": 3, "b.md": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("tieoffRuns = %v; want %v (dot-directories skipped)", got, want)
	}
	added := agentruns.Added(map[string]int{"a/plan.md": 2, "c.md": 1}, got)
	if want := map[string]int{"a/plan.md": 1, "b.md": 1}; !reflect.DeepEqual(added, want) {
		t.Errorf("sectionsAdded = %v; want %v", added, want)
	}
}
