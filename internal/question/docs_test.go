package question_test

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
)

// TestDocsExamples: the question and the answer docs/formats.md shows are
// what knotd writes for them, byte for byte.
func TestDocsExamples(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the example is written with Unix paths")
	}
	doc, err := os.ReadFile("../../docs/formats.md")
	if err != nil {
		t.Fatal(err)
	}
	c := question.FromClaude("Write", json.RawMessage(`{"file_path":"/home/ada/vault/notes/plan.md","content":"# Plan\n\n- one\n- two, now\n- three\n"}`), "/home/ada/vault")
	c.Why = "I'll add the third point to the plan."
	q := tieoff.Section{Event: strand.Modified, Strand: "notes/plan.md", Time: time.Date(2026, 11, 21, 19, 31, 40, 0, time.UTC),
		RunID: "01a1ffa9-5b6e-7d20-b1c4-3e8f0a7d9c12.q3f9a2c1b", Asked: true, Question: "3f9a2c1b", Call: c.Hash(),
		Body: question.QuestionBody(question.Ask{ID: "3f9a2c1b", Agent: "claude", Note: "notes/plan.md", Call: c, Current: []byte("# Plan\n\n- one\n- two\n")})}
	at := time.Date(2026, 11, 21, 20, 2, 13, 0, time.UTC)
	a := tieoff.Section{Event: strand.Modified, Strand: "notes/plan.md", Time: at,
		RunID: "01a1ffa9-5b6e-7d20-b1c4-3e8f0a7d9c12.a3f9a2c1b", Question: "3f9a2c1b", Verdict: string(question.Deny),
		Body: question.AnswerBody(question.Answer{ID: "3f9a2c1b", Verdict: question.Deny, Why: "keep two as it is", From: question.FromNote, At: at}, c, "The agent is told.")}
	for _, s := range []tieoff.Section{q, a} {
		b, err := tieoff.Format(s)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "markdown\n"+string(b)+"```") {
			t.Errorf("docs/formats.md does not show, in a markdown block:\n%s", b)
		}
	}
}
