package state

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestGroups: recorded process groups survive a reopen, go with
// DeleteGroup, and damaged records are found by Check.
func TestGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := mustOpenStore(t, path)
	a := Group{ID: 4242, Start: 123456, Boot: "b0a1", Run: "0190-run"}
	b := Group{ID: 7, Start: 1, Boot: "b0a1"}
	require.NoError(t, s.Update(func(tx *Tx) error {
		if err := tx.PutGroup(a); err != nil {
			return err
		}
		return tx.PutGroup(b)
	}))
	require.NoError(t, s.Close())
	s = mustOpenStore(t, path)
	groups := func() (gs []Group) {
		t.Helper()
		require.NoError(t, s.View(func(tx *Tx) (err error) { gs, err = tx.Groups(); return err }))
		return gs
	}
	require.ElementsMatch(t, []Group{a, b}, groups(), "after a reopen")
	require.NoError(t, s.Update(func(tx *Tx) error { return tx.DeleteGroup(a.ID) }))
	require.Equal(t, []Group{b}, groups())
	require.NoError(t, s.Check(true))
	require.Error(t, s.Update(func(tx *Tx) error { return tx.PutGroup(Group{ID: 0}) }), "group 0 was recorded")

	for _, kv := range [][2]string{{"x", "\x01\x00"}, {"8", "\x01\x09ab"}, {"08", "\x01\x00"}, {"9", ""}} {
		require.NoError(t, s.db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bucketGroups).Put([]byte(kv[0]), []byte(kv[1])) }))
		if err := s.Check(false); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Check with a damaged group %q = %v; want ErrCorrupt", kv, err)
		}
		require.NoError(t, s.db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bucketGroups).Delete([]byte(kv[0])) }))
	}
	require.NoError(t, s.Close())
}
