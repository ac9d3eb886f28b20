package state

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestBreaker: a strand's breaker counts survive a reopen, follow a
// rename, go with a delete, and damaged ones are found by Check.
func TestBreaker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := mustOpenStore(t, path)
	t1 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	b := Breaker{Runs: []time.Time{t1, t1.Add(time.Second)}, Failed: 2}
	mustPut(t, s, rec("a.md", "# A\n"), "# A\n")
	mustPut(t, s, rec("c.md", "# C\n"), "# C\n")
	require.NoError(t, s.Update(func(tx *Tx) error {
		if err := tx.PutBreaker("a.md", b); err != nil {
			return err
		}
		return tx.PutBreaker("c.md", Breaker{Failed: 1})
	}))
	require.NoError(t, s.Close())
	s = mustOpenStore(t, path)
	get := func(rel string) (got Breaker) {
		t.Helper()
		require.NoError(t, s.View(func(tx *Tx) (err error) { got, err = tx.Breaker(rel); return err }))
		return got
	}
	require.Equal(t, b, get("a.md"), "after a reopen")
	require.NoError(t, s.Update(func(tx *Tx) error { return tx.Rename("a.md", "b/a.md") }))
	require.Equal(t, Breaker{}, get("a.md"), "the old path after a rename")
	require.Equal(t, b, get("b/a.md"), "the new path after a rename")
	require.NoError(t, s.Update(func(tx *Tx) error { return tx.Delete("c.md") }))
	require.Equal(t, Breaker{}, get("c.md"), "after a delete")
	require.NoError(t, s.Update(func(tx *Tx) error { return tx.PutBreaker("b/a.md", Breaker{}) }))
	require.Equal(t, Breaker{}, get("b/a.md"), "zero counts")
	require.NoError(t, s.Check(true))

	err := s.Update(func(tx *Tx) error { return tx.PutBreaker("../out.md", b) })
	require.Error(t, err, "a path out of the vault was counted")

	for _, v := range [][]byte{{0xff}, {0, 5, 1}, {0, 1, 2, 3}} {
		require.NoError(t, s.db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bucketBreakers).Put([]byte("d.md"), v) }))
		if err := s.Check(false); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Check with damaged counts %x = %v; want ErrCorrupt", v, err)
		}
	}
	require.NoError(t, s.Close())
}
