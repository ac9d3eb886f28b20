package state

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestPause: a pause keeps its first time and reason, follows a rename,
// ends with Resume, and a damaged one is found by Check.
func TestPause(t *testing.T) {
	s := mustOpenStore(t, filepath.Join(t.TempDir(), "state.db"))
	t1 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Hour)
	mustPut(t, s, rec("a.md", "# A\n"), "# A\n")

	steps := []struct {
		name string
		do   func(tx *Tx) (bool, error)
		want bool
	}{
		{"pause a.md", func(tx *Tx) (bool, error) { return tx.Pause("a.md", t1, "knotd pause") }, true},
		{"pause it again", func(tx *Tx) (bool, error) { return tx.Pause("a.md", t2, "later") }, false},
		{"pause a note without a record", func(tx *Tx) (bool, error) { return tx.Pause("new.md", t2, "") }, true},
		{"rename a.md", func(tx *Tx) (bool, error) { return true, tx.Rename("a.md", "b/a.md") }, true},
		{"resume new.md", func(tx *Tx) (bool, error) { return tx.Resume("new.md") }, true},
		{"resume it again", func(tx *Tx) (bool, error) { return tx.Resume("new.md") }, false},
	}
	for _, st := range steps {
		var got bool
		err := s.Update(func(tx *Tx) (err error) { got, err = st.do(tx); return err })
		require.NoError(t, err, st.name)
		require.Equal(t, st.want, got, st.name)
	}
	ps, err := s.Paused()
	require.NoError(t, err)
	require.Equal(t, []Pause{{Path: "b/a.md", Since: t1, Why: "knotd pause"}}, ps)
	_, ok, err := s.PausedOf("a.md")
	require.NoError(t, err)
	require.False(t, ok, "a.md is paused after it moved")
	require.NoError(t, s.Check(true))

	err = s.Update(func(tx *Tx) error { _, err := tx.Pause("../out.md", t1, ""); return err })
	require.Error(t, err, "a path out of the vault was paused")

	require.NoError(t, s.db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bucketPaused).Put([]byte("c.md"), []byte{0xff}) }))
	if err := s.Check(false); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check with a damaged pause = %v; want ErrCorrupt", err)
	}
}
