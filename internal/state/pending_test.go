package state

import (
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/strand"
)

func pending(runID string, ev strand.EventType, path, content string) Pending {
	r := rec(path, content)
	r.LastRunID = runID
	return Pending{
		RunID:   runID,
		Event:   ev,
		Record:  r,
		Content: []byte(content),
		Journal: []byte("## Event: " + ev.String() + "\n## Strand: " + path + "\n<!-- knot-run " + runID + " -->\nreply\n"),
	}
}

func TestStore_PendingSurvivesReopen(t *testing.T) {
	path := statePath(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// Journalled out of order: Pendings returns them by run id.
	p2 := pending("019a0000-0000-7000-8000-000000000002", strand.Modified, "b.md", "bee")
	p1 := pending("019a0000-0000-7000-8000-000000000001", strand.Created, "a.md", "ay")
	for _, p := range []Pending{p2, p1} {
		if err := s.PutPending(p); err != nil {
			t.Fatalf("PutPending(%s) = %v", p.RunID, err)
		}
	}
	// A crash: the process ends before Complete.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = mustOpenStore(t, path)
	got, err := s.Pendings()
	if err != nil {
		t.Fatal(err)
	}
	if want := []Pending{p1, p2}; !reflect.DeepEqual(got, want) {
		t.Errorf("Pendings() = %+v; want %+v", got, want)
	}
	if _, ok, _ := s.Get("a.md"); ok {
		t.Error("a pending run's record was committed before Complete")
	}
}

func TestStore_CompleteCommitsAndDrops(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	p := pending("run-1", strand.Modified, "a.md", "new content")
	if err := s.PutPending(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete("run-1"); err != nil {
		t.Fatalf("Complete = %v", err)
	}
	if got := mustGet(t, s, "a.md"); !reflect.DeepEqual(got, p.Record) {
		t.Errorf("Get after Complete = %+v; want %+v", got, p.Record)
	}
	if c, _, _ := s.Content("a.md"); string(c) != "new content" {
		t.Errorf("Content after Complete = %q; want %q", c, "new content")
	}
	if ps, _ := s.Pendings(); len(ps) != 0 {
		t.Errorf("Pendings after Complete = %d entries; want 0", len(ps))
	}
	if err := s.Complete("run-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Complete = %v; want ErrNotFound", err)
	}
}

func TestStore_CompleteDeletedRemovesRecord(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	mustPut(t, s, rec("gone.md", "last words"), "last words")
	p := pending("run-d", strand.Deleted, "gone.md", "last words")
	p.Content = nil // a deleted strand's content is not needed again
	if err := s.PutPending(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete("run-d"); err != nil {
		t.Fatalf("Complete = %v", err)
	}
	if _, ok, _ := s.Get("gone.md"); ok {
		t.Error("record of a deleted strand survived Complete")
	}
	if _, ok, _ := s.BySession(p.Record.Session); ok {
		t.Error("session of a deleted strand survived Complete")
	}
}

func TestStore_CompleteIsAtomic(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	holder := rec("holder.md", "h")
	mustPut(t, s, holder, "h")
	// The pending record claims holder's session: the commit must fail and
	// leave the journal entry in place for a later attempt.
	p := pending("run-x", strand.Created, "other.md", "o")
	p.Record.Session = holder.Session
	if err := s.PutPending(p); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete("run-x"); !errors.Is(err, ErrSessionTaken) {
		t.Fatalf("Complete = %v; want ErrSessionTaken", err)
	}
	if ps, _ := s.Pendings(); len(ps) != 1 {
		t.Errorf("Pendings after a failed Complete = %d entries; want 1", len(ps))
	}
}

func TestStore_PutPendingRejects(t *testing.T) {
	s := mustOpenStore(t, statePath(t))
	good := pending("run-1", strand.Modified, "a.md", "x")
	tests := []struct {
		name   string
		mutate func(*Pending)
	}{
		{"no run id", func(p *Pending) { p.RunID = "" }},
		{"invalid event", func(p *Pending) { p.Event = 0 }},
		{"bad path", func(p *Pending) { p.Record.Path = "../x.md" }},
		{"hash mismatch", func(p *Pending) { p.Content = []byte("other") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			tt.mutate(&p)
			if err := s.PutPending(p); err == nil {
				t.Errorf("PutPending(%s) = nil; want an error", tt.name)
			}
		})
	}
	if err := s.Update(func(tx *Tx) error { return tx.DeletePending("never-there") }); err != nil {
		t.Errorf("DeletePending(missing) = %v; want nil", err)
	}
}

func TestDecodePending_RoundTrip(t *testing.T) {
	for _, p := range []Pending{
		pending("r1", strand.Created, "a.md", ""),
		pending("r2", strand.Deleted, "dir/b.md", "gone"),
		{RunID: "r3", Event: strand.Modified, Record: Record{Path: "c.md", Hash: HashOf(nil)}},
	} {
		got, err := decodePending(p.RunID, appendPending(nil, &p))
		if err != nil {
			t.Fatalf("decodePending(appendPending(%s)) = %v", p.RunID, err)
		}
		want := p
		if len(want.Content) == 0 {
			want.Content = nil
		}
		if len(want.Journal) == 0 {
			want.Journal = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decodePending(appendPending(%s)) = %+v; want %+v", p.RunID, got, want)
		}
	}
}

// TestDecodePending_StoredBefore: a pending run journalled by an earlier
// knotd (these bytes are what it wrote, when the journal field was still
// called Section, and records were format 4) decodes to the same run:
// renaming the Go field changed nothing on disk.
func TestDecodePending_StoredBefore(t *testing.T) {
	stored, err := hex.DecodeString("" +
		"01020a6e6f7465732f612e6d6470040c8080c69393e086fc302a078280c69393" +
		"e086fc305891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e8" +
		"46f6be0306736573732d3100022430313961303030302d303030302d37303030" +
		"2d383030302d303030303030303030303031028094b1f096e086fc3000000668" +
		"656c6c6f0a6d7b2273656374696f6e223a7b224576656e74223a322c22537472" +
		"616e64223a226e6f7465732f612e6d64222c2252756e4944223a223031396130" +
		"3030302d303030302d373030302d383030302d30303030303030303030303122" +
		"2c22426f6479223a227265706c795c6e227d7d")
	if err != nil {
		t.Fatal(err)
	}
	const runID = "019a0000-0000-7000-8000-000000000001"
	want := Pending{
		RunID: runID,
		Event: strand.Modified,
		Record: Record{
			Path:        "notes/a.md",
			Hash:        HashOf([]byte("hello\n")),
			Stamp:       Stamp{Size: 6, ModTime: 1764300000000000000, Inode: 42, Device: 7, Ctime: 1764300000000000001},
			Session:     "sess-1",
			Turns:       2,
			LastRunID:   runID,
			LastOutcome: OutcomeSucceeded,
			Processed:   time.Unix(0, 1764300000500000000).UTC(),
		},
		Content: []byte("hello\n"),
		Journal: []byte(`{"section":{"Event":2,"Strand":"notes/a.md","RunID":"019a0000-0000-7000-8000-000000000001","Body":"reply\n"}}`),
	}
	got, err := decodePending(runID, stored)
	if err != nil {
		t.Fatalf("decodePending(stored) = %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodePending(stored) = %+v; want %+v", got, want)
	}
	// The record inside is written in today's format (5 since the
	// conversation's context size is kept): what is written again reads
	// back the same.
	again, err := decodePending(runID, appendPending(nil, &want))
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("decodePending(appendPending(stored run)) = %+v, %v; want %+v", again, err, want)
	}
}

func FuzzDecodePending(f *testing.F) {
	p := pending("r1", strand.Modified, "a.md", "content")
	f.Add(appendPending(nil, &p))
	f.Add([]byte{pendingVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePending("run", b)
		if err != nil {
			return
		}
		again, err := decodePending("run", appendPending(nil, &p))
		if err != nil || !reflect.DeepEqual(again, p) {
			t.Errorf("decodePending(appendPending(decodePending(%q))) = %+v, %v; want %+v", b, again, err, p)
		}
	})
}
