package agentruns

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStampLog_ReadsAsTheFileGrows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stamps")
	s := &Log{Path: path, Trim: "/v/"}
	if all, err := s.Poll(); err != nil || len(all) != 0 {
		t.Fatalf("poll() before the file exists = %v, %v; want none, nil", all, err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("1000 /v/a.md Modified r1\n2000 b.md - -\n3000 c."); err != nil {
		t.Fatal(err)
	}
	all, err := s.Poll()
	if err != nil || len(all) != 2 {
		t.Fatalf("poll() = %v, %v; want 2 stamps", all, err)
	}
	if all[0] != (Stamp{At: time.Unix(0, 1000), Strand: "a.md", Event: "Modified", Run: "r1"}) {
		t.Errorf("poll()[0] = %+v; want a.md at 1000ns, trimmed", all[0])
	}
	if _, err := f.WriteString("md - -\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, err = s.Wait(ctx, HasStrand("c.md"))
	if err != nil || len(all) != 3 {
		t.Fatalf("wait(c.md) = %v, %v; want 3 stamps", all, err)
	}
}

func TestStampLog_RejectsMalformedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stamps")
	if err := os.WriteFile(path, []byte("12 a.md\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Log{Path: path}
	if _, err := s.Poll(); err == nil {
		t.Error("poll() of a malformed line succeeded; want an error")
	}
}

func TestExactlyOnce(t *testing.T) {
	tests := []struct {
		name              string
		runs              map[string]int
		targets           []string
		wantMiss, wantDup int
	}{
		{"all once", map[string]int{"a": 1, "b": 1}, []string{"a", "b"}, 0, 0},
		{"one missed", map[string]int{"a": 1}, []string{"a", "b"}, 1, 0},
		{"one twice", map[string]int{"a": 2, "b": 1}, []string{"a", "b"}, 0, 1},
		{"a stranger", map[string]int{"a": 1, "b": 1, "z": 3}, []string{"a", "b"}, 0, 3},
		{"nothing expected", map[string]int{"z": 1}, nil, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			miss, dup := ExactlyOnce(tt.runs, tt.targets)
			if miss != tt.wantMiss || dup != tt.wantDup {
				t.Errorf("exactlyOnce(%v, %v) = %d, %d; want %d, %d", tt.runs, tt.targets, miss, dup, tt.wantMiss, tt.wantDup)
			}
		})
	}
}

func TestStampLog_Settle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stamps")
	if err := os.WriteFile(path, []byte("1 a.md - -\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Log{Path: path}
	all, err := s.Settle(t.Context(), 20*time.Millisecond)
	if err != nil || len(all) != 1 {
		t.Fatalf("settle = %v, %v; want the one stamp", all, err)
	}
}
