package state

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
)

// Question is a call an agent's run held for the user's answer
// (permissions: ask), as knotd keeps it until the run that continues after
// the answer has been journaled: waiting while Answer is nil, then
// answered (approve or deny) until its continuing run is under way. A
// withdrawn question, or one answered on another device, is deleted.
type Question struct {
	ID     string `json:"id"`
	Strand string `json:"strand"`
	// Call is the held call; CallHash (Call.Hash(), or the call= of the
	// question's section when the state was rebuilt from the tie-off,
	// which keeps no more of the call) is what an answer binds to.
	Call     question.Call `json:"call"`
	CallHash string        `json:"call_hash"`
	Agent    string        `json:"agent,omitempty"`
	// RunID is the run that asked; Resume its conversation's handle,
	// which the continuing run resumes; Event the change it answered;
	// Hash the marker hash of the version it ran on ("" when unknown).
	RunID  string           `json:"run_id"`
	Resume string           `json:"resume,omitempty"`
	Event  strand.EventType `json:"event"`
	Hash   string           `json:"hash,omitempty"`
	Asked  time.Time        `json:"asked"`
	// Answer is the user's answer once given; nil while it waits.
	Answer *question.Answer `json:"answer,omitempty"`
	// Written reports that the answer's section is in the tie-off.
	Written bool `json:"written,omitempty"`
}

// Waiting reports whether q still waits for an answer.
func (q Question) Waiting() bool { return q.Answer == nil }

// maxQuestion bounds one question's encoding (its call carries a bounded
// diff and input).
const maxQuestion = 1 << 20

// PutQuestion records q (new, or answered since). The bucket is made by
// the first question recorded; the schema stays 2 (an older knotd ignores
// it).
func (tx *Tx) PutQuestion(q Question) error {
	if !question.ValidID(q.ID) {
		return fmt.Errorf("state: question %q: not a question id", q.ID)
	}
	if q.CallHash == "" {
		q.CallHash = q.Call.Hash()
	}
	if err := validatePath("question", q.Strand); err != nil {
		return err
	}
	v, err := json.Marshal(q)
	if err != nil {
		return fmt.Errorf("state: question %s: %w", q.ID, err)
	}
	if len(v) > maxQuestion {
		return fmt.Errorf("state: question %s: %d bytes, more than %d", q.ID, len(v), maxQuestion)
	}
	b := tx.tx.Bucket(bucketQuestions)
	if b == nil {
		if b, err = tx.tx.CreateBucket(bucketQuestions); err != nil {
			return fmt.Errorf("state: question %s: %w", q.ID, err)
		}
	}
	if err := b.Put([]byte(q.ID), v); err != nil {
		return fmt.Errorf("state: question %s: %w", q.ID, err)
	}
	return nil
}

// QuestionOf returns the question id; ok is false when there is none.
func (tx *Tx) QuestionOf(id string) (q Question, ok bool, err error) {
	b := tx.tx.Bucket(bucketQuestions)
	if b == nil {
		return q, false, nil
	}
	v := b.Get([]byte(id))
	if v == nil {
		return q, false, nil
	}
	q, err = decodeQuestion(id, v)
	return q, err == nil, err
}

// DeleteQuestion forgets the question id (none is not an error).
func (tx *Tx) DeleteQuestion(id string) error {
	b := tx.tx.Bucket(bucketQuestions)
	if b == nil || b.Get([]byte(id)) == nil {
		return nil
	}
	if err := b.Delete([]byte(id)); err != nil {
		return fmt.Errorf("state: question %s: %w", id, err)
	}
	return nil
}

// Questions returns every recorded question, oldest asked first (then by
// id).
func (tx *Tx) Questions() ([]Question, error) {
	b := tx.tx.Bucket(bucketQuestions)
	if b == nil {
		return nil, nil
	}
	var qs []Question
	err := b.ForEach(func(k, v []byte) error {
		q, err := decodeQuestion(string(k), v)
		if err == nil {
			qs = append(qs, q)
		}
		return err
	})
	slices.SortFunc(qs, func(a, b Question) int {
		if c := a.Asked.Compare(b.Asked); c != 0 {
			return c
		}
		return compareStrings(a.ID, b.ID)
	})
	return qs, err
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func decodeQuestion(id string, v []byte) (Question, error) {
	var q Question
	if err := json.Unmarshal(v, &q); err != nil || q.ID != id || !question.ValidID(id) || validatePath("question", q.Strand) != nil {
		return Question{}, fmt.Errorf("%w: question %q: %w", ErrCorrupt, id, errCorruptValue)
	}
	return q, nil
}

// Questions returns every recorded question, oldest first.
func (s *Store) Questions() (qs []Question, err error) {
	err = s.View(func(tx *Tx) error {
		qs, err = tx.Questions()
		return err
	})
	return qs, err
}
