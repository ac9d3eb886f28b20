package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/question"
	"github.com/stretchr/testify/require"
)

// fakeQuestioner is a fakeBackend with questions: it answers those of
// waiting, and records the answers.
type fakeQuestioner struct {
	fakeBackend
	waiting []Question
	answers []string
}

func (f *fakeQuestioner) Questions(context.Context) ([]Question, error) {
	return f.waiting, f.note("questions")
}

func (f *fakeQuestioner) Answer(_ context.Context, id string, v question.Verdict, why string, from question.Source) (Answered, error) {
	f.answers = append(f.answers, fmt.Sprintf("%s %s %q %s", v, id, why, from))
	for i, q := range f.waiting {
		if q.ID == id {
			f.waiting = append(f.waiting[:i], f.waiting[i+1:]...)
			return Answered{Question: q, Verdict: v, Next: "knotd continues the run"}, nil
		}
	}
	return Answered{}, fmt.Errorf("%w: %s (waiting: none)", ErrNoQuestion, id)
}

// TestClient_Questions: the questions and the answers cross the socket
// whole; an unknown id is still ErrNoQuestion on the client's side; only
// the command and the console answer through the socket.
func TestClient_Questions(t *testing.T) {
	asked := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	q := Question{ID: "3f9a2c1b", Note: "notes/plan.md", Agent: "claude", RunID: "r1", Asked: asked, Summary: "edit notes/plan.md (Write)",
		Call: question.Call{Tool: "Write", Kind: question.KindEdit, Path: "notes/plan.md", Input: json.RawMessage(`{"file_path":"notes/plan.md"}`), Diff: "+a\n", Why: "so"}}
	b := &fakeQuestioner{waiting: []Question{q}}
	c := serve(t, b)
	ctx := t.Context()

	qs, err := c.Questions(ctx)
	require.NoError(t, err)
	require.Equal(t, []Question{q}, qs)

	a, err := c.Answer(ctx, "3f9a2c1b", question.Deny, "not now", question.FromCommand)
	require.NoError(t, err)
	require.Equal(t, Answered{Question: q, Verdict: question.Deny, Next: "knotd continues the run"}, a)

	_, err = c.Answer(ctx, "3f9a2c1b", question.Approve, "", question.FromConsole)
	require.ErrorIs(t, err, ErrNoQuestion)
	require.EqualError(t, err, "no such question waits: 3f9a2c1b (waiting: none)")

	for _, from := range []question.Source{question.FromNote, question.FromKnotd, ""} {
		_, err = c.Answer(ctx, "3f9a2c1b", question.Approve, "", from)
		require.ErrorContains(t, err, "comes from the command or the console", "from %q", from)
		require.NotErrorIs(t, err, ErrNoQuestion)
	}
	require.Equal(t, []string{`deny 3f9a2c1b "not now" command`, `approve 3f9a2c1b "" console`}, b.answers)

	// An empty list is a list.
	qs, err = c.Questions(ctx)
	require.NoError(t, err)
	require.Empty(t, qs)
	require.NotNil(t, qs)
}

// TestClient_NoQuestioner: a daemon that takes no questions says so.
func TestClient_NoQuestioner(t *testing.T) {
	c := serve(t, &fakeBackend{})
	_, err := c.Questions(t.Context())
	require.EqualError(t, err, "this knotd does not take questions")
	_, err = c.Answer(t.Context(), "3f9a2c1b", question.Approve, "", question.FromCommand)
	require.EqualError(t, err, "this knotd does not take answers")
	require.False(t, errors.Is(err, ErrNoQuestion))
}

func TestSummary(t *testing.T) {
	long := strings.Repeat("x", 200)
	for _, tc := range []struct {
		call question.Call
		want string
	}{
		{question.Call{Tool: "Write", Kind: question.KindEdit, Path: "notes/plan.md"}, "edit notes/plan.md (Write)"},
		{question.Call{Tool: "Bash", Kind: question.KindCommand, Command: "git push\n  --force"}, "run `git push --force` (Bash)"},
		{question.Call{Tool: "WebFetch", Kind: question.KindFetch, URL: "https://example.com/a"}, "fetch https://example.com/a (WebFetch)"},
		{question.Call{Tool: "edit", Kind: question.KindEdit}, "edit a file (edit)"},
		{question.Call{Tool: "mcp__x__y", Kind: question.KindOther}, "use mcp__x__y"},
		{question.Call{Tool: "Bash", Kind: question.KindCommand, Command: long}, "run `" + long[:119-len("run `")] + "…"},
		{question.Call{Tool: "Bash", Kind: question.KindCommand, Command: "echo \x1b[31mred\r"}, "run `echo [31mred` (Bash)"},
	} {
		got := Summary(tc.call)
		require.Equal(t, tc.want, got)
		require.LessOrEqual(t, len([]rune(got)), maxSummary)
	}
}

func TestQuestionID(t *testing.T) {
	for _, tc := range []struct {
		in, id string
		prefix bool
		bad    bool
	}{
		{in: "3f9a2c1b", id: "3f9a2c1b"},
		{in: " 3F9A2C1B ", id: "3f9a2c1b"},
		{in: "3f9a", id: "3f9a", prefix: true},
		{in: "3f9", bad: true},
		{in: "3f9a2c1b0", bad: true},
		{in: "3f9a2c1g", bad: true},
		{in: "", bad: true},
		{in: "../x", bad: true},
	} {
		id, prefix, err := QuestionID(tc.in)
		if tc.bad {
			require.ErrorContains(t, err, "is not a question's id", tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.id, id)
		require.Equal(t, tc.prefix, prefix, tc.in)
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 40 * time.Second: "40s", 5*time.Minute + 59*time.Second: "5m",
		3*time.Hour + 20*time.Minute: "3h20m", 52 * time.Hour: "2d4h",
	} {
		require.Equal(t, want, Age(d), "%v", d)
	}
}
