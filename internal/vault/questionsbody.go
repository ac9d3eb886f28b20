package vault

import (
	"errors"
	"io/fs"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/vaultfs"
)

// parseNoteAnswers reads the answers in a note's knot_answer
// (question.ParseNoteAnswers); problems say what cannot be read.
func parseNoteAnswers(content []byte) (answers []question.Answer, problems []string) {
	doc, err := frontmatter.Parse(content)
	if err != nil {
		return nil, nil // the note's run says what is wrong with it
	}
	as, errs := question.ParseNoteAnswers(doc.Fields.Answer)
	for _, a := range as {
		answers = append(answers, question.Answer{ID: a.ID, Verdict: a.Verdict, Why: a.Why, From: question.FromNote})
	}
	for _, e := range errs {
		problems = append(problems, e.Error())
	}
	return answers, problems
}

// callSummary is what a call does, in a few words: "edit notes/plan.md".
func callSummary(c question.Call) string { return question.Summary(c) }

// maxQuestionFile bounds the read of the file an edit would change, for
// the question's diff.
const maxQuestionFile = 256 << 10

// questionBody is the body of q's section: what the agent wants to do
// (an edit's diff against the file as it is now, read through the vault
// root and bounded), why if it said, and how to answer.
func (v *Vault) questionBody(q state.Question) string {
	a := question.Ask{ID: q.ID, Agent: q.Agent, Note: q.Strand, Call: q.Call,
		MachineOnly: v.config().AnswersFrom == config.AnswersMachine}
	if q.Call.Kind == question.KindEdit && q.Call.Path != "" && !q.Call.Outside {
		b, _, err := vaultfs.ReadFile(v.fs, q.Call.Path, maxQuestionFile)
		switch {
		case err == nil:
			a.Current = b
		case errors.Is(err, fs.ErrNotExist):
			a.Current = []byte{} // a new file
		}
	}
	return question.QuestionBody(a)
}
