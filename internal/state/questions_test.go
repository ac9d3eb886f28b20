package state

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestQuestions: recorded questions survive a reopen, are listed oldest
// first, keep their answer, go with DeleteQuestion, and damaged records
// are found by Check.
func TestQuestions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s := mustOpenStore(t, path)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	call := question.Call{Tool: "Write", Kind: question.KindEdit, Input: []byte(`{"file_path":"a.md"}`), Path: "a.md"}
	older := Question{ID: "0000000a", Strand: "n.md", Call: call, Agent: "claude", RunID: "r1", Resume: "s1", Event: strand.Modified, Asked: t0}
	newer := Question{ID: "00000001", Strand: "m/n.md", Call: call, RunID: "r2", Event: strand.Created, Asked: t0.Add(time.Minute)}
	require.NoError(t, s.Update(func(tx *Tx) error {
		if err := tx.PutQuestion(newer); err != nil {
			return err
		}
		return tx.PutQuestion(older)
	}))
	require.NoError(t, s.Close())
	s = mustOpenStore(t, path)
	qs, err := s.Questions()
	require.NoError(t, err)
	require.Len(t, qs, 2)
	require.Equal(t, []string{older.ID, newer.ID}, []string{qs[0].ID, qs[1].ID}, "oldest first")
	require.Equal(t, call.Hash(), qs[0].Call.Hash(), "the call's hash survives the store")
	require.True(t, qs[0].Waiting())

	older.Answer = &question.Answer{ID: older.ID, CallHash: call.Hash(), Verdict: question.Approve, From: question.FromNote, At: t0}
	require.NoError(t, s.Update(func(tx *Tx) error { return tx.PutQuestion(older) }))
	require.NoError(t, s.View(func(tx *Tx) error {
		q, ok, err := tx.QuestionOf(older.ID)
		require.True(t, ok)
		require.False(t, q.Waiting())
		require.Equal(t, question.Approve, q.Answer.Verdict)
		return err
	}))
	require.NoError(t, s.Update(func(tx *Tx) error { return tx.DeleteQuestion(older.ID) }))
	qs, err = s.Questions()
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.NoError(t, s.Check(true))

	for _, bad := range []Question{{ID: "xyz", Strand: "n.md"}, {ID: "00000002", Strand: "../n.md"}} {
		require.Error(t, s.Update(func(tx *Tx) error { return tx.PutQuestion(bad) }), "%+v was recorded", bad)
	}
	for _, kv := range [][2]string{{"00000003", "{"}, {"00000004", `{"id":"00000005","strand":"n.md"}`}} {
		require.NoError(t, s.db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bucketQuestions).Put([]byte(kv[0]), []byte(kv[1])) }))
		if err := s.Check(false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%q: Check = %v, want ErrCorrupt", kv, err)
		}
		require.NoError(t, s.db.Update(func(btx *bolt.Tx) error { return btx.Bucket(bucketQuestions).Delete([]byte(kv[0])) }))
	}
}
