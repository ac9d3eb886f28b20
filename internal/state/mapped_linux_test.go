package state

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/testutil"
	bolt "go.etcd.io/bbolt"
)

func TestStore_DropMapped(t *testing.T) {
	path := statePath(t)
	s := mustOpenStore(t, path)
	body := strings.Repeat("a line of a note\n", 200)
	if err := s.Update(func(tx *Tx) error {
		for i := range 2000 {
			p := fmt.Sprintf("d%02d/n%04d.md", i%20, i)
			if err := tx.Put(rec(p, body+p), []byte(body+p)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	readAll := func() {
		t.Helper()
		n := 0
		if err := s.ForEach(func(r Record) error {
			c, ok, err := s.Content(r.Path)
			if err != nil || !ok || HashOf(c) != r.Hash {
				return fmt.Errorf("Content(%s) = %d bytes, %v, %v; want the recorded content", r.Path, len(c), ok, err)
			}
			n++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != 2000 {
			t.Fatalf("ForEach saw %d records; want 2000", n)
		}
	}
	readAll()
	if kb := testutil.MustMappedRSS(t, path); kb < 1024 {
		t.Fatalf("after reading every record %d KiB of the state file are resident; want the pages read (over 1 MiB)", kb)
	}
	if err := s.DropMapped(); err != nil {
		t.Fatalf("DropMapped: %v", err)
	}
	if kb := testutil.MustMappedRSS(t, path); kb != 0 {
		t.Errorf("after dropMapped %d KiB of the state file are resident; want 0", kb)
	}
	readAll() // the mapping still reads the file
	mustPut(t, s, rec("z.md", "z"), "z")
	if got := mustGet(t, s, "z.md"); got.Hash != HashOf([]byte("z")) {
		t.Errorf("Get(z.md) after dropMapped = %+v; want the record just put", got)
	}
}

// TestStore_DropMappedCoversBboltsMapping fails when bbolt changes how it
// maps the state file: DropMapped takes the mapping's start from bbolt's
// DB.Info().Data and its length from the transaction's Size, neither of
// which bbolt promises anything about. The mapping in /proc/self/maps must
// be one, read-only and shared, start at Info().Data and reach past Size.
// If this fails, change or drop DropMapped (its only user is vault's
// releaseMemory); TestStore_DropMapped says whether it still works.
func TestStore_DropMappedCoversBboltsMapping(t *testing.T) {
	path := statePath(t)
	s := mustOpenStore(t, path)
	for i := range 200 {
		p := fmt.Sprintf("n%03d.md", i)
		body := strings.Repeat(p, 100)
		mustPut(t, s, rec(p, body), body)
	}
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	type mapping struct {
		start, end uint64
		perms      string
	}
	var maps []mapping
	for _, line := range strings.Split(string(b), "\n") {
		// start-end perms offset dev inode path
		f := strings.Fields(line)
		if len(f) < 6 || strings.Join(f[5:], " ") != path {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("/proc/self/maps: odd line %q", line)
		}
		maps = append(maps, mapping{start, end, f[1]})
	}
	var data uintptr
	var size int64
	if err := s.db.View(func(tx *bolt.Tx) error {
		data, size = s.db.Info().Data, tx.Size()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(maps) != 1 {
		t.Fatalf("bbolt maps the state file %d times (%+v); DropMapped assumes one mapping", len(maps), maps)
	}
	m := maps[0]
	if m.start != uint64(data) {
		t.Errorf("bbolt's Info().Data = %#x; its mapping of the state file starts at %#x", data, m.start)
	}
	if size <= 0 || m.end-m.start < uint64(size) {
		t.Errorf("the transaction's Size is %d bytes; the mapping is %d bytes: DropMapped would release past it", size, m.end-m.start)
	}
	if m.perms != "r--s" {
		t.Errorf("the mapping's permissions are %s; DropMapped assumes r--s (read-only, shared: dropping the pages loses nothing)", m.perms)
	}
}
