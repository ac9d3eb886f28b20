package state

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// mappedRSS returns how many kilobytes of the file at path this process has
// resident through its mappings of it, from /proc/self/smaps.
func mappedRSS(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	kb, in, found := 0, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			// A mapping's header line: range perms offset dev inode [path].
			in = len(fields) >= 6 && strings.Join(fields[5:], " ") == path
			found = found || in
		case in && fields[0] == "Rss:":
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				t.Fatalf("smaps: %q: %v", sc.Text(), err)
			}
			kb += n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatalf("%s is not mapped", path)
	}
	return kb
}

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
	if kb := mappedRSS(t, path); kb < 1024 {
		t.Fatalf("after reading every record %d KiB of the state file are resident; want the pages read (over 1 MiB)", kb)
	}
	if err := s.DropMapped(); err != nil {
		t.Fatalf("DropMapped: %v", err)
	}
	if kb := mappedRSS(t, path); kb != 0 {
		t.Errorf("after dropMapped %d KiB of the state file are resident; want 0", kb)
	}
	readAll() // the mapping still reads the file
	mustPut(t, s, rec("z.md", "z"), "z")
	if got := mustGet(t, s, "z.md"); got.Hash != HashOf([]byte("z")) {
		t.Errorf("Get(z.md) after dropMapped = %+v; want the record just put", got)
	}
}
