package ctl

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/vault/internal/answer"
)

var _ control.Questioner = (*Control)(nil)

// maxListed bounds the waiting questions an error lists.
const maxListed = 10

// Questions returns the questions that wait for the user's answer,
// oldest first.
func (c *Control) Questions(context.Context) ([]control.Question, error) {
	qs, err := c.host.Questions()
	if err != nil {
		return nil, err
	}
	if qs == nil {
		qs = []control.Question{}
	}
	return qs, nil
}

// Answer answers the question id, or the one question whose id begins
// with it (4 digits or more), with verdict and the user's reason why,
// given from: the vault writes the answer into the note's tie-off and,
// for an approval or a denial, the run that continues is scheduled. It
// says which ids wait when none is id (an error wrapping
// control.ErrNoQuestion), and which ones id could be when it is the start
// of several.
func (c *Control) Answer(_ context.Context, id string, verdict question.Verdict, why string, from question.Source) (control.Answered, error) {
	switch verdict {
	case question.Approve, question.Deny, question.Withdraw:
	default:
		return control.Answered{}, fmt.Errorf("%q is no answer: approve, deny or withdraw", verdict)
	}
	id, prefix, err := control.QuestionID(id)
	if err != nil {
		return control.Answered{}, err
	}
	why = strings.TrimSpace(why)
	if len(why) > question.MaxWhy {
		return control.Answered{}, fmt.Errorf("the reason is %d bytes; at most %d are allowed: shorten it", len(why), question.MaxWhy)
	}
	if prefix {
		qs, err := c.host.Questions()
		if err != nil {
			return control.Answered{}, err
		}
		var ids []string
		for _, q := range qs {
			if strings.HasPrefix(q.ID, id) {
				ids = append(ids, q.ID)
			}
		}
		switch len(ids) {
		case 0:
			return control.Answered{}, control.NoQuestion(fmt.Sprintf("no question whose id begins with %s waits: %s", id, waiting(qs)))
		case 1:
			id = ids[0]
		default:
			return control.Answered{}, fmt.Errorf("%s is the start of the ids of %d questions that wait (%s): give more of it", id, len(ids), strings.Join(ids, ", "))
		}
	}
	q, err := c.host.AnswerQuestion(id, verdict, why, from)
	if errors.Is(err, control.ErrNoQuestion) {
		qs, lerr := c.host.Questions()
		if lerr != nil {
			return control.Answered{}, fmt.Errorf("no question %s waits (it was answered already, or there is none), and the questions that wait cannot be listed: %w", id, lerr)
		}
		return control.Answered{}, control.NoQuestion(fmt.Sprintf("no question %s waits (it was answered already, or there is none): %s", id, waiting(qs)))
	}
	if err != nil {
		return control.Answered{}, err
	}
	c.host.Log().Info("question answered", "question", q.ID, "strand", q.Note, "verdict", verdict, "from", from)
	return control.Answered{Question: q, Verdict: verdict, Next: c.next(verdict, q.Note)}, nil
}

// next says what happens after an answer with verdict to a question of
// the note rel.
func (c *Control) next(verdict question.Verdict, rel string) string {
	if verdict == question.Withdraw {
		return "nothing runs for it"
	}
	if s := c.host.Store(); s != nil {
		if _, paused, err := s.PausedOf(rel); err == nil && paused {
			return "the note is paused: the run continues once it is resumed (knotd resume " + rel + ")"
		}
	}
	if _, live := c.host.Live(); live {
		return "knotd continues the run now"
	}
	if a := c.o.Answering; a == nil {
		// (no answering device: a test's adapter)
	} else if d := a.LastDecision(); d != nil && !d.Answer {
		return "this device stands by (" + answer.StandbyReason(*d) + "): the run continues where knotd answers the vault"
	}
	return "no knotd runs for the vault: the run continues at its next start or pass (knotd, or knotd --once)"
}

// waiting lists the questions qs for an error: their ids, notes and what
// each call does, at most maxListed of them.
func waiting(qs []control.Question) string {
	if len(qs) == 0 {
		return "no question waits"
	}
	var parts []string
	for _, q := range qs[:min(len(qs), maxListed)] {
		parts = append(parts, fmt.Sprintf("%s (%s: %s)", q.ID, q.Note, q.Summary))
	}
	s := "waiting: " + strings.Join(parts, ", ")
	if len(qs) > maxListed {
		s += fmt.Sprintf(", and %d more (knotd status lists them)", len(qs)-maxListed)
	}
	return s
}
