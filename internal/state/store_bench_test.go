package state

import (
	"fmt"
	"path/filepath"
	"testing"
)

// fillStore adopts n records without fsync.
func fillStore(b *testing.B, s *Store, n int) {
	b.Helper()
	s.db.NoSync = true
	defer func() { s.db.NoSync = false }()
	if err := adopt(s, n, 5_000); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStore_Adopt measures first contact with a 100,000-strand vault:
// records and contents written in transactions of 5,000, with fsync.
func BenchmarkStore_Adopt(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		s := mustOpenStore(b, filepath.Join(b.TempDir(), "state.db"))
		b.StartTimer()
		if err := adopt(s, 100_000, 5_000); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStore_Put measures committing one strand's record (one
// transaction) in a store that already holds 1,000 or 100,000 records,
// with fsync (what knotd does) and without (the B+tree work alone).
func BenchmarkStore_Put(b *testing.B) {
	for _, sync := range []bool{true, false} {
		for _, existing := range []int{1_000, 100_000} {
			b.Run(fmt.Sprintf("sync=%v/existing=%d", sync, existing), func(b *testing.B) {
				s := mustOpenStore(b, statePath(b))
				fillStore(b, s, existing)
				s.db.NoSync = !sync
				content := []byte(fmt.Sprintf("%240s", "edited note"))
				i := 0
				before := s.db.Stats().TxStats
				for b.Loop() {
					n := (i * 7919) % existing // spread over the tree
					r := Record{Path: fmt.Sprintf("notes/%03d/%06d.md", n%1000, n), Hash: HashOf(content),
						Session: fmt.Sprintf("session-%06d", n), Turns: i}
					if err := s.Put(r, content); err != nil {
						b.Fatal(err)
					}
					i++
				}
				// Page writes per commit do not depend on the machine's load,
				// unlike ns/op on a shared machine.
				after := s.db.Stats().TxStats
				b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/float64(i), "pagewrites/op")
			})
		}
	}
}

// BenchmarkStore_ForEach measures a full scan of 100,000 records (what a
// full reconcile reads before it stats the files).
func BenchmarkStore_ForEach(b *testing.B) {
	s := mustOpenStore(b, statePath(b))
	fillStore(b, s, 100_000)
	for b.Loop() {
		n := 0
		if err := s.ForEach(func(Record) error { n++; return nil }); err != nil || n != 100_000 {
			b.Fatalf("ForEach = %v after %d records", err, n)
		}
	}
}

// BenchmarkOpenStore measures opening a store of 100,000 records, which
// reads bbolt's free-page list from its page (every commit writes it).
func BenchmarkOpenStore(b *testing.B) {
	path := statePath(b)
	s, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	fillStore(b, s, 100_000)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStore_Check measures the consistency check knotd runs when it
// opens a store (records, index and content keys; content: also every
// content's hash) at 100,000 strands, against ForEach, a pass over the
// records alone.
func BenchmarkStore_Check(b *testing.B) {
	s := mustOpenStore(b, statePath(b))
	fillStore(b, s, 100_000)
	b.Run("ForEach", func(b *testing.B) {
		for b.Loop() {
			if err := s.ForEach(func(Record) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, content := range []bool{false, true} {
		b.Run(fmt.Sprintf("content=%v", content), func(b *testing.B) {
			for b.Loop() {
				if err := s.Check(content); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
