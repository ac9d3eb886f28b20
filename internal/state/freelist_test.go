package state

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func fileSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// TestStore_ReopenAfterCloseWritesNothing: a store that was written,
// freed pages and was closed opens, reads and closes without changing its
// file, and what it holds stays readable and writable.
func TestStore_ReopenAfterCloseWritesNothing(t *testing.T) {
	path := statePath(t)
	s := mustOpenStore(t, path)
	for i := range 50 {
		p := fmt.Sprintf("n/%02d.md", i)
		mustPut(t, s, rec(p, p), p)
	}
	if err := s.Update(func(tx *Tx) error { return tx.Delete("n/07.md") }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sum := fileSum(t, path)

	s = mustOpenStore(t, path)
	n := 0
	if err := s.ForEach(func(Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 49 {
		t.Errorf("ForEach saw %d records; want 49", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fileSum(t, path) != sum {
		t.Error("opening, reading and closing the store changed its file")
	}

	s = mustOpenStore(t, path)
	mustPut(t, s, rec("n/07.md", "again"), "again")
	if got, ok, err := s.Content("n/07.md"); err != nil || !ok || !bytes.Equal(got, []byte("again")) {
		t.Errorf("Content(n/07.md) = %q, %v, %v; want again", got, ok, err)
	}
	if got := mustGet(t, s, "n/42.md"); got.Hash != HashOf([]byte("n/42.md")) {
		t.Errorf("Get(n/42.md).Hash = %s; want the hash of its content", got.Hash)
	}
}

// TestStore_OpensAFileWithoutFreeList: an older knotd committed without
// bbolt's free-page list and saved it only when it closed cleanly, so
// after a crash its file has none. Such a file opens, keeps its records,
// takes new ones and opens again.
func TestStore_OpensAFileWithoutFreeList(t *testing.T) {
	path := statePath(t)
	s := mustOpenStore(t, path)
	for i := range 50 {
		p := fmt.Sprintf("n/%02d.md", i)
		mustPut(t, s, rec(p, p), p)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What the older knotd left: a commit (here, of nothing) without the
	// list, and no clean close after it.
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(*bolt.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	for round := range 2 {
		s = mustOpenStore(t, path)
		n := 0
		if err := s.ForEach(func(Record) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if want := 50 + round; n != want {
			t.Errorf("round %d: ForEach saw %d records; want %d", round, n, want)
		}
		if round == 0 {
			mustPut(t, s, rec("new.md", "new"), "new")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
