package question_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

const tail = "A change to the note's text withdraws this question, and knotd runs the change.\n"

// FuzzQuestionBody builds questions from arbitrary calls: the body stays
// bounded, nothing in it leaves a block open (the answer line and the last
// paragraph are top-level blocks of the Markdown), and the tie-off keeps it
// as one section, not fenced as a whole.
func FuzzQuestionBody(f *testing.F) {
	f.Add(uint8(0), "claude", "notes/plan.md", "# Plan\n- one\n", "# Plan\n- two\n", "I'll edit.", false)
	f.Add(uint8(1), "x`y", "a`b\n## Event: c", "```\n<!--", "````", "> quote\n```", true)
	f.Add(uint8(2), "", "", "", "", "", false)
	f.Add(uint8(3), "**", "<pre>", "<script>", "    code", "- list\n  ```", false)
	f.Add(uint8(4), "a", "b", "~~~\n", "\x00\xff\xfe", "<![CDATA[", true)
	f.Add(uint8(5), "a", "b", strings.Repeat("`", 40), "x", strings.Repeat("word ", 300), false)
	md := goldmark.New()
	f.Fuzz(func(t *testing.T, kind uint8, agent, p, content, current, why string, machine bool) {
		var c question.Call
		switch kind % 6 {
		case 0:
			in, _ := json.Marshal(map[string]any{"file_path": "/v/" + p, "content": content})
			c = question.FromClaude("Write", in, "/v")
		case 1:
			in, _ := json.Marshal(map[string]any{"file_path": "/v/" + p, "old_string": current, "new_string": content})
			c = question.FromClaude("Edit", in, "/v")
		case 2:
			in, _ := json.Marshal(map[string]any{"command": content})
			c = question.FromClaude("Bash", in, "/v")
		case 3:
			c = question.Call{Tool: p, Kind: question.KindEdit, Path: p, Diff: content}
		case 4:
			c = question.Call{Tool: p, Kind: question.KindFetch, URL: content}
		default:
			c = question.Call{Tool: p, Kind: question.KindOther, Input: json.RawMessage(content)}
		}
		c.Why = why
		id := question.NewID("run", c.Hash())
		var cur []byte
		if kind%2 == 0 {
			cur = []byte(current)
		}
		body := question.QuestionBody(question.Ask{ID: id, Agent: agent, Note: "notes/" + p, Call: c, Current: cur, MachineOnly: machine})
		if len(body) > 8000 {
			t.Fatalf("body is %d bytes", len(body))
		}
		if !strings.HasSuffix(body, "\n\n"+tail) {
			t.Fatalf("body does not end with its last paragraph:\n%s", body)
		}
		src := []byte(body)
		doc := md.Parser().Parse(text.NewReader(src))
		last := doc.LastChild()
		if p, ok := last.(*ast.Paragraph); !ok || string(p.Lines().Value(src)) != strings.TrimSuffix(tail, "\n") {
			t.Fatalf("the last block is %T, not the closing paragraph:\n%s", last, body)
		}
		if !machine {
			found := false
			for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
				if cb, ok := n.(*ast.CodeBlock); ok && string(cb.Lines().Value(src)) == "knot_answer: approve "+id+"\n" {
					found = true
				}
			}
			if !found {
				t.Fatalf("no top-level code block with the answer line:\n%s", body)
			}
		}
		// The tie-off keeps it as one section and does not fence it.
		q := tieoff.Section{Event: strand.Modified, Strand: "notes/a.md", Time: time.Unix(1e9, 0), RunID: "r1",
			Asked: true, Question: id, Call: c.Hash(), Body: body}
		b, err := tieoff.Format(q)
		if err != nil {
			t.Fatal(err)
		}
		secs, probs := tieoff.Parse(b)
		if len(secs) != 1 || len(probs) > 0 || !strings.HasPrefix(secs[0].Body, "**") || !strings.HasSuffix(secs[0].Body, tail) {
			t.Fatalf("tie-off of the body: %d sections, %v:\n%s", len(secs), probs, b)
		}
		if open := tieoff.OpenQuestions(secs); len(open) != 1 || open[0].Question != id {
			t.Fatalf("OpenQuestions = %+v", open)
		}
	})
}
