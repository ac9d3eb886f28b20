package ctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/state"
	"github.com/stretchr/testify/require"
)

// fakeQuestions are the questions of a fakeHost: those that wait, and the
// answers given.
type fakeQuestions struct {
	waiting []control.Question
	answers []string
}

func (h fakeHost) Questions() ([]control.Question, error) {
	if h.qs == nil {
		return nil, nil
	}
	return slices.Clone(h.qs.waiting), nil
}

func (h fakeHost) AnswerQuestion(id string, v question.Verdict, why string, from question.Source) (control.Question, error) {
	for i, q := range h.qs.waiting {
		if q.ID == id {
			h.qs.waiting = slices.Delete(h.qs.waiting, i, i+1)
			h.qs.answers = append(h.qs.answers, fmt.Sprintf("%s %s %q %s", v, id, why, from))
			return q, nil
		}
	}
	return control.Question{}, fmt.Errorf("%w: vault: no such question", control.ErrNoQuestion)
}

// TestAnswer: an answer reaches the vault with the question's whole id,
// given whole, in capitals, or as a prefix that only it has, and says what
// happens next; an id no question has lists those that wait; a prefix of
// several ids names them; what is no id or no verdict is refused before
// the vault is asked.
func TestAnswer(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	questions := func() []control.Question {
		return []control.Question{
			{ID: "3f9a2c1b", Note: "plan.md", Summary: "edit plan.md (Write)", Asked: t0},
			{ID: "3f9a7700", Note: "b.md", Summary: "run `make` (Bash)", Asked: t0.Add(time.Minute)},
			{ID: "77aa0011", Note: "c.md", Summary: "fetch https://example.com (WebFetch)", Asked: t0.Add(2 * time.Minute)},
		}
	}
	for _, tc := range []struct {
		name    string
		id      string
		verdict question.Verdict
		why     string
		live    bool
		answer  string // what the vault got, "" nothing
		next    string
		err     string
		noQ     bool   // the error is ErrNoQuestion
		paused  string // a paused note
	}{
		{name: "whole id, daemon", id: "3f9a2c1b", verdict: question.Approve, live: true,
			answer: `approve 3f9a2c1b "" command`, next: "knotd continues the run now"},
		{name: "capitals, a reason, no daemon", id: "3F9A2C1B", verdict: question.Deny, why: "  not that file \n",
			answer: `deny 3f9a2c1b "not that file" command`, next: "no knotd runs for the vault: the run continues at its next start or pass (knotd, or knotd --once)"},
		{name: "a prefix only one has", id: "77aa", verdict: question.Withdraw, live: true,
			answer: `withdraw 77aa0011 "" command`, next: "nothing runs for it"},
		{name: "a paused note", id: "77aa0011", verdict: question.Approve, live: true, paused: "c.md",
			answer: `approve 77aa0011 "" command`, next: "the note is paused: the run continues once it is resumed (knotd resume c.md)"},
		{name: "a prefix of two", id: "3f9", verdict: question.Approve, err: `"3f9" is not a question's id`},
		{name: "a longer prefix of two", id: "3f9A", verdict: question.Approve,
			err: "3f9a is the start of the ids of 2 questions that wait (3f9a2c1b, 3f9a7700): give more of it"},
		{name: "a prefix none has", id: "dead", verdict: question.Approve, noQ: true,
			err: "no question whose id begins with dead waits: waiting: 3f9a2c1b (plan.md: edit plan.md (Write)), 3f9a7700 (b.md: run `make` (Bash)), 77aa0011 (c.md: fetch https://example.com (WebFetch))"},
		{name: "an unknown id", id: "deadbeef", verdict: question.Deny, noQ: true,
			err: "no question deadbeef waits (it was answered already, or there is none): waiting: 3f9a2c1b (plan.md: edit plan.md (Write)), 3f9a7700 (b.md: run `make` (Bash)), 77aa0011 (c.md: fetch https://example.com (WebFetch))"},
		{name: "a reason too long", id: "3f9a2c1b", verdict: question.Deny, why: strings.Repeat("é", question.MaxWhy/2) + "x",
			err: "the reason is 501 bytes; at most 500 are allowed: shorten it"},
		{name: "a reason just short enough", id: "3f9a2c1b", verdict: question.Deny, why: strings.Repeat("é", question.MaxWhy/2), live: true,
			answer: `deny 3f9a2c1b "` + strings.Repeat("é", question.MaxWhy/2) + `" command`, next: "knotd continues the run now"},
		{name: "no verdict", id: "3f9a2c1b", verdict: "yes", err: `"yes" is no answer: approve, deny or withdraw`},
		{name: "no id", id: "plan.md", verdict: question.Approve, err: `"plan.md" is not a question's id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := fakeHost{qs: &fakeQuestions{waiting: questions()}, store: openStore(t)}
			if tc.paused != "" {
				require.NoError(t, h.store.Update(func(tx *state.Tx) error {
					_, err := tx.Pause(tc.paused, t0, "busy")
					return err
				}))
			}
			if tc.live {
				h.live = &fakeScheduler{}
			}
			c := New(h, Options{})
			a, err := c.Answer(context.Background(), tc.id, tc.verdict, tc.why, question.FromCommand)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Equal(t, tc.noQ, errors.Is(err, control.ErrNoQuestion), "ErrNoQuestion")
				require.Empty(t, h.qs.answers)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{tc.answer}, h.qs.answers)
			require.Equal(t, tc.verdict, a.Verdict)
			require.Equal(t, tc.next, a.Next)
			require.Contains(t, tc.answer, a.Question.ID)
		})
	}
}

// TestAnswer_AnsweredTwice: the second answer to a question finds it
// answered, and says that none waits.
func TestAnswer_AnsweredTwice(t *testing.T) {
	h := fakeHost{qs: &fakeQuestions{waiting: []control.Question{{ID: "3f9a2c1b", Note: "plan.md", Summary: "edit plan.md (Write)"}}}}
	c := New(h, Options{})
	_, err := c.Answer(context.Background(), "3f9a2c1b", question.Approve, "", question.FromConsole)
	require.NoError(t, err)
	_, err = c.Answer(context.Background(), "3f9a2c1b", question.Deny, "", question.FromConsole)
	require.ErrorIs(t, err, control.ErrNoQuestion)
	require.EqualError(t, err, "no question 3f9a2c1b waits (it was answered already, or there is none): no question waits")
	require.Equal(t, []string{`approve 3f9a2c1b "" console`}, h.qs.answers)
	qs, err := c.Questions(context.Background())
	require.NoError(t, err)
	require.NotNil(t, qs)
	require.Empty(t, qs)
}
