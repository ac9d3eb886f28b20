package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// syncedFreelist reports whether the bbolt file at path records a free-page
// list, read from its newer meta page: then an open reads the list from
// that page instead of scanning the whole file to rebuild it.
//
// The layout is bbolt's file format: each meta page starts with a 16-byte
// page header, then magic, version, page size and flags (4 bytes each),
// the root bucket (16 bytes), the free-list page id, the high-water page
// id and the transaction id (8 bytes each). A page id of all ones means
// "no free-page list".
func syncedFreelist(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const hdr = 16
	le := binary.LittleEndian
	pageSize := int(le.Uint32(b[hdr+8:]))
	if pageSize < 512 || len(b) < 2*pageSize {
		t.Fatalf("%s: page size %d in a file of %d bytes", path, pageSize, len(b))
	}
	var freelist, txid uint64
	for i := range 2 {
		m := b[i*pageSize+hdr:]
		if le.Uint32(m) != 0xED0CDAED {
			t.Fatalf("%s: meta page %d has no bbolt magic", path, i)
		}
		if id := le.Uint64(m[48:]); i == 0 || id > txid {
			freelist, txid = le.Uint64(m[32:]), id
		}
	}
	return freelist != ^uint64(0)
}

func fileSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestStore_CloseSavesFreelist(t *testing.T) {
	tests := []struct {
		name  string
		write bool
		want  bool
	}{
		{"written", true, true},
		{"only read", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := statePath(t)
			s := mustOpenStore(t, path)
			mustPut(t, s, rec("a.md", "a"), "a")
			// Leave the file as a crash would: no free-page list.
			crashed := filepath.Join(t.TempDir(), "state.db")
			mustWrite(t, crashed, mustRead(t, path))
			if syncedFreelist(t, crashed) {
				t.Fatalf("a commit wrote the free-page list; want commits without it")
			}

			c := mustOpenStore(t, crashed)
			mustGet(t, c, "a.md")
			if tt.write {
				mustPut(t, c, rec("b.md", "b"), "b")
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if got := syncedFreelist(t, crashed); got != tt.want {
				t.Errorf("after Close the free-page list is saved = %v; want %v", got, tt.want)
			}
		})
	}
}

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
	if !syncedFreelist(t, path) {
		t.Fatal("Close did not save the free-page list")
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

	// The saved list is used: new records go into the freed pages or
	// past them, and everything stays readable.
	s = mustOpenStore(t, path)
	mustPut(t, s, rec("n/07.md", "again"), "again")
	if got, ok, err := s.Content("n/07.md"); err != nil || !ok || !bytes.Equal(got, []byte("again")) {
		t.Errorf("Content(n/07.md) = %q, %v, %v; want again", got, ok, err)
	}
	if got := mustGet(t, s, "n/42.md"); got.Hash != HashOf([]byte("n/42.md")) {
		t.Errorf("Get(n/42.md).Hash = %s; want the hash of its content", got.Hash)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
