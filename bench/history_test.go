package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/bench/internal/agentruns"
	"github.com/knotd/knotd/internal/tieoff"
)

func TestWriteTieOff_IsWhatAppendsMake(t *testing.T) {
	for _, n := range []int{1, 2, 30} {
		path := filepath.Join(t.TempDir(), "plan.tieoff.md")
		if err := writeTieOff(path, n); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		secs, problems := tieoff.Parse(b)
		if len(secs) != n || len(problems) != 0 {
			t.Fatalf("writeTieOff(%d): Parse found %d sections and problems %v; want %d and none", n, len(secs), problems, n)
		}
		if strings.TrimSpace(secs[n-1].Body) != reply(n-1) || secs[n-1].Strand != historyStrand || secs[n-1].Torn {
			t.Errorf("writeTieOff(%d): last section %+v; want reply %d of %s, whole", n, secs[n-1], n-1, historyStrand)
		}
		if got, err := agentruns.Sections(path); err != nil || got != n {
			t.Errorf("countMarkers(writeTieOff(%d)) = %d, %v; want %d", n, got, err, n)
		}
		if _, err := os.Stat(path + ".scratch"); !os.IsNotExist(err) {
			t.Errorf("writeTieOff(%d) left its scratch file: %v", n, err)
		}
	}
}

func TestDryRunPrompt(t *testing.T) {
	tests := []struct {
		name, out, want string
		wantErr         bool
	}{
		{"one strand", "==> Modified " + historyStrand + " (agent instant)\n## Event Context\nEvent: Modified\n\nbody\n\n", "## Event Context\nEvent: Modified\n\nbody", false},
		{"first contact", "first contact: knotd would adopt 1 strands as processed\n", "", true},
		{"two strands", "==> Modified " + historyStrand + " (agent x)\np\n\n==> Created b.md (agent x)\nq\n\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := dryRunPrompt(tt.out)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("dryRunPrompt(%q) = %q, %v; want %q, error %v", tt.out, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
