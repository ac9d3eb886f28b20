package vault

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/state"
	"gopkg.in/yaml.v3"
)

// The words of questions and answers as the vault writes them. (Package
// question's helpers, once there, take their place.)

// keyAnswer is the frontmatter key of answers in a note.
const keyAnswer = "knot_answer"

// maxNoteAnswers bounds how many answers one note's knot_answer gives.
const maxNoteAnswers = 32

// parseNoteAnswers reads the answers in a note's knot_answer: a string or
// a list of strings, each "approve ID [reason]", "deny ID [reason]" or
// "withdraw ID" (the verb in any case). What cannot be read is a problem,
// never guessed.
func parseNoteAnswers(content []byte) (answers []question.Answer, problems []string) {
	doc, err := frontmatter.Parse(content)
	if err != nil || doc.Block.End <= doc.Block.Start {
		return nil, nil
	}
	block := content[doc.Block.Start:doc.Block.End]
	// The block's --- lines around the YAML.
	block = bytes.TrimPrefix(bytes.TrimPrefix(block, []byte("\ufeff")), []byte("---"))
	if i := bytes.LastIndex(block, []byte("\n---")); i >= 0 {
		block = block[:i]
	}
	var m map[string]yaml.Node
	if err := yaml.Unmarshal(block, &m); err != nil {
		return nil, nil
	}
	n, ok := m[keyAnswer]
	if !ok {
		return nil, nil
	}
	var lines []string
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag != "!!null" {
			lines = append(lines, n.Value)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				problems = append(problems, "knot_answer: each answer is a line like \"approve 3f9a2c1b\"")
				continue
			}
			lines = append(lines, c.Value)
		}
	default:
		return nil, []string{"knot_answer is a line like \"approve 3f9a2c1b\", or a list of them"}
	}
	for _, l := range lines[:min(len(lines), maxNoteAnswers)] {
		f := strings.Fields(l)
		if len(f) < 2 {
			problems = append(problems, fmt.Sprintf("knot_answer %q: an answer is a verb and a question's id, like \"approve 3f9a2c1b\"", l))
			continue
		}
		v := question.Verdict(strings.ToLower(f[0]))
		id := strings.ToLower(f[1])
		switch {
		case v != question.Approve && v != question.Deny && v != question.Withdraw:
			problems = append(problems, fmt.Sprintf("knot_answer %q: %q is not approve, deny or withdraw", l, f[0]))
			continue
		case !question.ValidID(id):
			problems = append(problems, fmt.Sprintf("knot_answer %q: %q is not a question's id (8 hex digits)", l, f[1]))
			continue
		case v == question.Withdraw && len(f) > 2:
			problems = append(problems, fmt.Sprintf("knot_answer %q: withdraw takes no reason", l))
			continue
		}
		answers = append(answers, question.Answer{ID: id, Verdict: v, Why: strings.Join(f[2:], " "), From: question.FromNote})
	}
	return answers, problems
}

// callSummary is what a call does, in a few words: "edit notes/plan.md".
func callSummary(c question.Call) string {
	switch {
	case c.Kind == question.KindEdit && c.Path != "":
		return "edit " + c.Path
	case c.Kind == question.KindCommand && c.Command != "":
		return "run " + firstLineOf(c.Command, 80)
	case c.Kind == question.KindFetch && c.URL != "":
		return "fetch " + firstLineOf(c.URL, 120)
	}
	return "use " + c.Tool
}

// firstLineOf is s's first line, cut at n bytes.
func firstLineOf(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// maxQuestionPart bounds each part of a question's body.
const maxQuestionPart = 8 << 10

// questionBody is the body of q's section: what the agent wants to do,
// why if it said, and how to answer.
func (v *Vault) questionBody(q state.Question) string {
	c := q.Call
	var b strings.Builder
	fmt.Fprintf(&b, "**%s asks to %s** (%s)\n\n", q.Agent, "`"+strings.ReplaceAll(callSummary(c), "`", "'")+"`", c.Tool)
	if c.Why != "" {
		for _, l := range strings.Split(bound(c.Why, 1024), "\n") {
			b.WriteString("> " + l + "\n")
		}
		b.WriteString("\n")
	}
	fence := func(lang, s string) {
		fmt.Fprintf(&b, "````%s\n%s\n````\n\n", lang, strings.ReplaceAll(bound(s, maxQuestionPart), "````", "` ` ` `"))
	}
	switch {
	case c.Kind == question.KindEdit && c.Diff != "":
		fence("diff", c.Diff)
	case c.Kind == question.KindCommand && c.Command != "":
		fence("", c.Command)
	case c.Kind == question.KindFetch && c.URL != "":
		fence("", c.URL)
	case len(c.Input) > 0:
		fence("json", string(c.Input))
	}
	if v.config().AnswersFrom == config.AnswersMachine {
		fmt.Fprintf(&b, "This vault takes answers only on the machine running knotd (answers_from: machine): `knotd approve %s` or `knotd deny %s --why \"...\"`.\n", q.ID, q.ID)
		return b.String()
	}
	fmt.Fprintf(&b, "To answer, add this line to the frontmatter of `%s` (in Obsidian: Properties):\n\n    knot_answer: approve %s\n\n", path.Base(q.Strand), q.ID)
	fmt.Fprintf(&b, "or `knot_answer: deny %s <your reason>`. On the machine running knotd: `knotd approve %s` or `knotd deny %s --why \"...\"`.\n", q.ID, q.ID, q.ID)
	return b.String()
}

// bound cuts s to n bytes, on a rune.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "\n…"
}
