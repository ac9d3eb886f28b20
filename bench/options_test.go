package main

import (
	"io"
	"slices"
	"testing"
	"time"

	"github.com/knotd/knotd/bench/internal/stats"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(options) bool
		wantErr bool
	}{
		{"defaults", nil, func(o options) bool {
			return o.runs == 3 && o.idle == time.Minute && slices.Equal(o.sizes, []int{1000, 10000, 100000}) &&
				slices.Equal(o.scenarios, scenarioNames) && o.turns == 50 && slices.Equal(o.clis, []string{"claude", "codex", "gemini"})
		}, false},
		{"quick", []string{"-quick"}, func(o options) bool {
			return o.runs == 1 && o.idle == 10*time.Second && o.burst == 1000 && slices.Equal(o.sizes, []int{1000, 10000}) && o.turns == 10
		}, false},
		{"explicit flags win over quick", []string{"-quick", "-runs", "2", "-sizes", "100k"}, func(o options) bool {
			return o.runs == 2 && slices.Equal(o.sizes, []int{100000}) && o.samples == 50
		}, false},
		{"scenarios run in canonical order", []string{"-scenarios", "reaction, startup"}, func(o options) bool {
			return slices.Equal(o.scenarios, []string{"startup", "reaction"})
		}, false},
		{"unknown scenario", []string{"-scenarios", "warp"}, nil, true},
		{"bad size", []string{"-sizes", "1m"}, nil, true},
		{"zero runs", []string{"-runs", "0"}, nil, true},
		{"bad profile", []string{"-profile", "everything"}, nil, true},
		{"profile with a size", []string{"-profile", "startup:100k"}, func(o options) bool { return o.profile == "startup:100k" }, false},
		{"profile with a bad size", []string{"-profile", "startup:lots"}, nil, true},
		{"stray argument", []string{"vault"}, nil, true},
		{"conversation with some CLIs", []string{"-scenarios", "conversation", "-clis", "gemini, claude", "-turns", "4"}, func(o options) bool {
			return slices.Equal(o.scenarios, []string{"conversation"}) && slices.Equal(o.clis, []string{"gemini", "claude"}) && o.turns == 4
		}, false},
		{"conversation is not profiled", []string{"-profile", "conversation"}, nil, true},
		{"unknown CLI", []string{"-clis", "claude,aider"}, nil, true},
		{"zero turns", []string{"-turns", "0"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseOptions(tt.args, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseOptions(%q) error = %v; want error %v", tt.args, err, tt.wantErr)
			}
			if err == nil && !tt.check(o) {
				t.Errorf("parseOptions(%q) = %+v; not what the case expects", tt.args, o)
			}
		})
	}
}

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("100k, 1k,10K,1000,7")
	if want := []int{7, 1000, 10000, 100000}; err != nil || !slices.Equal(got, want) {
		t.Errorf(`parseSizes("100k, 1k,10K,1000,7") = %v, %v; want %v`, got, err, want)
	}
}

func TestNearestAndThousands(t *testing.T) {
	if got := nearest([]int{1000, 100000}, 10000); got != 1000 {
		t.Errorf("nearest([1k 100k], 10k) = %d; want 1000", got)
	}
	for n, want := range map[int]string{7: "7", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567"} {
		if got := stats.Thousands(n); got != want {
			t.Errorf("thousands(%d) = %q; want %q", n, got, want)
		}
	}
}
