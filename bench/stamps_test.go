package main

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestStampLog_ReadsAsTheFileGrows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stamps")
	s := &stampLog{path: path, trim: "/v/"}
	if all, err := s.poll(); err != nil || len(all) != 0 {
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
	all, err := s.poll()
	if err != nil || len(all) != 2 {
		t.Fatalf("poll() = %v, %v; want 2 stamps", all, err)
	}
	if all[0] != (stamp{At: time.Unix(0, 1000), Strand: "a.md", Event: "Modified", Run: "r1"}) {
		t.Errorf("poll()[0] = %+v; want a.md at 1000ns, trimmed", all[0])
	}
	if _, err := f.WriteString("md - -\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	all, err = s.wait(ctx, hasStrand("c.md"))
	if err != nil || len(all) != 3 {
		t.Fatalf("wait(c.md) = %v, %v; want 3 stamps", all, err)
	}
}

func TestStampLog_RejectsMalformedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stamps")
	if err := os.WriteFile(path, []byte("12 a.md\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &stampLog{path: path}
	if _, err := s.poll(); err == nil {
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
			miss, dup := exactlyOnce(tt.runs, tt.targets)
			if miss != tt.wantMiss || dup != tt.wantDup {
				t.Errorf("exactlyOnce(%v, %v) = %d, %d; want %d, %d", tt.runs, tt.targets, miss, dup, tt.wantMiss, tt.wantDup)
			}
		})
	}
}

func TestLogBook_ParsesLinesAcrossWrites(t *testing.T) {
	b := newLogBook()
	b.Write([]byte(`{"time":"2026-01-02T03:04:05.000000001Z","level":"INFO","msg":"run started","strand":"a.md","run":"r1"}` + "\nnot json\n{\"msg\":\"run fin"))
	b.Write([]byte(`ished","strand":"a.md"}` + "\n"))
	ls := b.snapshot()
	if len(ls) != 2 || ls[0].Strand != "a.md" || ls[0].Time.Nanosecond() != 1 || ls[1].Msg != msgRunFinished {
		t.Fatalf("snapshot() = %+v; want run started and run finished of a.md", ls)
	}
	if n := b.count("run "); n != 2 {
		t.Errorf(`count("run ") = %d; want 2`, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { b.Write([]byte(`{"msg":"watcher: watching","took":5}` + "\n")) })
	err := b.wait(ctx, hasMsg(msgWatching))
	wg.Wait()
	if err != nil {
		t.Fatalf("wait(watching) = %v", err)
	}
	if l, ok := find(b.snapshot(), msgWatching); !ok || l.Took != 5 {
		t.Errorf("find(watching) = %+v, %v; want took 5", l, ok)
	}
}
