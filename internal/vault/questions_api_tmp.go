// TEMP(q-ui): replaced by h4-q-vault's implementation at merge.

package vault

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/question"
)

// Question is a question an agent's run asked that waits for the user's
// answer.
type Question struct {
	ID, Strand string // Strand: vault-relative slash path of the note
	Call       question.Call
	Agent      string
	RunID      string // the run that asked
	Asked      time.Time
}

// ErrNoQuestion is returned for an id no waiting question has (unknown,
// or answered already).
var ErrNoQuestion = errors.New("vault: no such question")

// ErrAnswersFromMachine refuses an answer from the note when the vault
// takes answers only from the machine.
var ErrAnswersFromMachine = errors.New("vault: this vault takes answers only from the machine running knotd")

// tmpQuestions stands in for the state's waiting questions, by vault root.
var tmpQuestions = struct {
	mu sync.Mutex
	m  map[string]map[string]Question
}{m: map[string]map[string]Question{}}

// Questions returns the questions that wait, oldest first.
func (v *Vault) Questions() ([]Question, error) {
	tmpQuestions.mu.Lock()
	defer tmpQuestions.mu.Unlock()
	var qs []Question
	for _, q := range tmpQuestions.m[v.root] {
		qs = append(qs, q)
	}
	slices.SortFunc(qs, func(a, b Question) int { return a.Asked.Compare(b.Asked) })
	return qs, nil
}

// AnswerQuestion answers the waiting question id.
func (v *Vault) AnswerQuestion(id string, verdict question.Verdict, why string, from question.Source) (Question, error) {
	tmpQuestions.mu.Lock()
	defer tmpQuestions.mu.Unlock()
	q, ok := tmpQuestions.m[v.root][id]
	if !ok {
		return Question{}, ErrNoQuestion
	}
	delete(tmpQuestions.m[v.root], id)
	return q, nil
}
