package vault

import (
	"context"
	"testing"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/stretchr/testify/require"
)

// TestQuestions_Control: what the control socket serves of a vault's
// questions: the question that waits, in Questions, in Status and in the
// stored status of a vault no daemon runs; an answer given by a prefix of
// its id, written as a section of the tie-off, saying that the run
// continues at the next pass; a second answer to it, refused with the
// ids that wait (none).
func TestQuestions_Control(t *testing.T) {
	a := newAskEnv(t, "")
	ctx := context.Background()
	want := control.Question{ID: a.q.ID, Note: "n.md", Agent: a.q.Agent, RunID: a.q.RunID, Asked: a.q.Asked.UTC(),
		Summary: "edit out.txt (Write)", Call: a.q.Call}

	qs, err := a.v.Control().Questions(ctx)
	mustDo(t, err)
	require.Equal(t, []control.Question{want}, qs)
	st, err := a.v.Control().Status(ctx)
	mustDo(t, err)
	require.Equal(t, []control.Question{want}, st.Questions)
	mustDo(t, a.v.Close())
	st, known, err := StoredStatus(a.home, a.root)
	mustDo(t, err)
	require.True(t, known)
	require.Equal(t, []control.Question{want}, st.Questions, "the stored status lists the question too")

	a.v = a.reopen()
	an, err := a.v.Control().Answer(ctx, a.q.ID[:5], question.Deny, " not now ", question.FromCommand)
	mustDo(t, err)
	require.Equal(t, want, an.Question)
	require.Equal(t, question.Deny, an.Verdict)
	require.Equal(t, "no knotd runs for the vault: the run continues at its next start or pass (knotd, or knotd --once)", an.Next)
	require.Equal(t, []string{"run", "question", "deny"}, a.kinds()[:3], "the answer is a section of the tie-off")

	_, err = a.v.Control().Answer(ctx, a.q.ID, question.Approve, "", question.FromConsole)
	require.ErrorIs(t, err, control.ErrNoQuestion)
	require.EqualError(t, err, "no question "+a.q.ID+" waits (it was answered already, or there is none): no question waits")
	qs, err = a.v.Control().Questions(ctx)
	mustDo(t, err)
	require.Empty(t, qs)
}
