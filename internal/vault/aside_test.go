package vault

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestOpen_DamagedStoresAsideInOneSecond: two damaged stores moved aside
// in the same second are both kept, under two names (the second used to
// take the first's name, and a rename overwrote it).
func TestOpen_DamagedStoresAsideInOneSecond(t *testing.T) {
	e := newEnv(t)
	e.write("a.md", "# A\n")
	e.onceFresh()
	path := e.statePath()
	second := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	opts := e.options()
	var want [][]byte
	for i := range 3 {
		junk := bytes.Repeat([]byte{'0' + byte(i), ' ', 'n', 'o', 't', ' ', 'a', ' ', 'd', 'b', '\n'}, 4096)
		mustDo(t, os.WriteFile(path, junk, 0o600))
		want = append(want, junk)
		// The same second each time, a little later in it.
		opts.Now = func() time.Time { return second.Add(time.Duration(i) * time.Millisecond) }
		v, err := Open(e.root, opts)
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		mustDo(t, v.Close())
	}
	aside, err := filepath.Glob(path + ".damaged-*")
	mustDo(t, err)
	slices.Sort(aside)
	base := path + ".damaged-20261128T010203Z"
	if !slices.Equal(aside, []string{base, base + "-2", base + "-3"}) {
		t.Fatalf("moved aside: %v; want three copies", aside)
	}
	for i, p := range aside {
		got, err := os.ReadFile(p)
		mustDo(t, err)
		if !bytes.Equal(got, want[i]) {
			t.Errorf("%s holds %.20q; want the store damaged %d-th", p, got, i+1)
		}
	}
}
