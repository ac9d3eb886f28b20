package tieoff

import (
	"errors"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/strand"
)

// testCall is a held call's hash as a question records it.
const testCall = "3b1f6a8c2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8"

// mkQuestion is a question section asked at t0+i minutes; mkAnswer an
// answer to question id with verdict v.
func mkQuestion(i int, id string) Section {
	s := mkSection(i, strand.Modified, "notes/plan.md", "**claude asks to edit `notes/plan.md`** (Write)\n")
	s.Asked, s.Question, s.Call = true, id, testCall
	return s
}

func mkAnswer(i int, id, v string) Section {
	s := mkSection(i, strand.Modified, "notes/plan.md", "Answered from the note.\n")
	s.Question, s.Verdict = id, v
	return s
}

// TestFormat_Question: a question and each answer are written exactly so
// (Status, marker fields after the others) and read back field for field.
func TestFormat_Question(t *testing.T) {
	const head = "## Event: Modified\n## Strand: notes/plan.md\n## Timestamp: 2026-11-21T19:30:05Z\n"
	q := mkQuestion(0, "3f9a2c1b")
	q.Hash, q.Session = testHash, testSession
	tests := []struct {
		name string
		s    Section
		want string
	}{
		{"question", q, head + "## Status: question\n<!-- knot:run 0190f3c2-7b1a-7c3d-9e2f-000000000000 bytes=48 sha256=" + testHash + " session=" + testSession +
			" question=3f9a2c1b call=" + testCall + " -->\n---\n\n**claude asks to edit `notes/plan.md`** (Write)\n"},
		{"approved", mkAnswer(0, "3f9a2c1b", "approve"), head + "## Status: approved\n<!-- knot:run 0190f3c2-7b1a-7c3d-9e2f-000000000000 bytes=24 question=3f9a2c1b verdict=approve -->\n---\n\nAnswered from the note.\n"},
		{"denied", mkAnswer(0, "3f9a2c1b", "deny"), head + "## Status: denied\n<!-- knot:run 0190f3c2-7b1a-7c3d-9e2f-000000000000 bytes=24 question=3f9a2c1b verdict=deny -->\n---\n\nAnswered from the note.\n"},
		{"withdrawn", mkAnswer(0, "3f9a2c1b", "withdraw"), head + "## Status: withdrawn\n<!-- knot:run 0190f3c2-7b1a-7c3d-9e2f-000000000000 bytes=24 question=3f9a2c1b verdict=withdraw -->\n---\n\nAnswered from the note.\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustFormat(t, tt.s)
			if string(b) != tt.want {
				t.Fatalf("Format = %q\nwant     %q", b, tt.want)
			}
			secs, probs := Parse(b)
			if len(secs) != 1 || len(probs) > 0 {
				t.Fatalf("Parse = %d sections, %s", len(secs), problemsString(probs))
			}
			if err := sameSection(secs[0], written(tt.s)); err != nil {
				t.Error(err)
			}
			if secs[0].IsRun() {
				t.Error("IsRun() = true for a question or an answer")
			}
		})
	}
}

// TestFormat_QuestionInvalid: Format refuses a question or an answer that
// could not be read back as one.
func TestFormat_QuestionInvalid(t *testing.T) {
	q := func(f func(*Section)) Section { s := mkQuestion(0, "3f9a2c1b"); f(&s); return s }
	a := func(f func(*Section)) Section { s := mkAnswer(0, "3f9a2c1b", "approve"); f(&s); return s }
	tests := []struct {
		name string
		s    Section
	}{
		{"question without run id", q(func(s *Section) { s.RunID = "" })},
		{"question without id", q(func(s *Section) { s.Question = "" })},
		{"question id too short", q(func(s *Section) { s.Question = "3f9a2c1" })},
		{"question id upper case", q(func(s *Section) { s.Question = "3F9A2C1B" })},
		{"question id not hex", q(func(s *Section) { s.Question = "3f9a2c1g" })},
		{"question id with a space", q(func(s *Section) { s.Question = "3f9a c1b" })},
		{"question id forging a field", q(func(s *Section) { s.Question = "a verdict=approve" })},
		{"question without call", q(func(s *Section) { s.Call = "" })},
		{"question call short", q(func(s *Section) { s.Call = testCall[:63] })},
		{"question call upper case", q(func(s *Section) { s.Call = strings.ToUpper(testCall) })},
		{"question call forging the end", q(func(s *Section) { s.Call = testCall[:60] + " -->" })},
		{"question with a verdict", q(func(s *Section) { s.Verdict = "approve" })},
		{"question failed", q(func(s *Section) { s.Failed = true })},
		{"question paused", q(func(s *Section) { s.Paused = true })},
		{"answer without run id", a(func(s *Section) { s.RunID = "" })},
		{"answer without id", a(func(s *Section) { s.Question = "" })},
		{"answer bad id", a(func(s *Section) { s.Question = "zzzzzzzz" })},
		{"answer unknown verdict", a(func(s *Section) { s.Verdict = "maybe" })},
		{"answer verdict as its status", a(func(s *Section) { s.Verdict = "approved" })},
		{"answer verdict upper case", a(func(s *Section) { s.Verdict = "Approve" })},
		{"answer with a call", a(func(s *Section) { s.Call = testCall })},
		{"answer failed", a(func(s *Section) { s.Failed = true })},
		{"reply with a question id", func() Section { s := mkSection(0, strand.Modified, "n.md", "x"); s.Question = "3f9a2c1b"; return s }()},
		{"reply with a call", func() Section { s := mkSection(0, strand.Modified, "n.md", "x"); s.Call = testCall; return s }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := Format(tt.s); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Format = %q, %v; want ErrInvalid", b, err)
			}
		})
	}
}

// TestParse_QuestionForged: a question or an answer whose Status and marker
// do not agree (a hand edit, a forged value) is reported, never read as
// waiting or as answering, and never as a reply.
func TestParse_QuestionForged(t *testing.T) {
	const head = "## Event: Modified\n## Strand: n.md\n## Timestamp: 2026-11-21T19:30:05Z\n"
	const run = "<!-- knot:run r1 bytes=3"
	tests := []struct {
		name     string
		doc      string
		asked    bool
		verdict  string
		question string // the id read; "" when none
		probs    int
		line     int // of the first problem
	}{
		{name: "question", doc: head + "## Status: question\n" + run + " question=3f9a2c1b call=" + testCall + " -->\n---\n\nQ?\n", asked: true, question: "3f9a2c1b"},
		{name: "status in another case", doc: head + "## Status: QUESTION\n" + run + " question=3f9a2c1b call=" + testCall + " -->\n---\n\nQ?\n", asked: true, question: "3f9a2c1b"},
		{name: "answer", doc: head + "## Status: Denied\n" + run + " verdict=deny question=3f9a2c1b -->\n---\n\nNo\n", verdict: "deny", question: "3f9a2c1b"},
		{name: "question without marker", doc: head + "## Status: question\n---\n\nQ?\n", asked: true, probs: 1, line: 4},
		{name: "question without call", doc: head + "## Status: question\n" + run + " question=3f9a2c1b -->\n---\n\nQ?\n", asked: true, probs: 1, line: 5},
		{name: "question with a verdict", doc: head + "## Status: question\n" + run + " question=3f9a2c1b call=" + testCall + " verdict=approve -->\n---\n\nQ?\n", asked: true, probs: 1, line: 5},
		{name: "question with a bad id", doc: head + "## Status: question\n" + run + " question=3F9A2C1B call=" + testCall + " -->\n---\n\nQ?\n", asked: true, probs: 2, line: 5},
		{name: "question with a bad call", doc: head + "## Status: question\n" + run + " question=3f9a2c1b call=xyz -->\n---\n\nQ?\n", asked: true, probs: 2, line: 5},
		{name: "question id twice", doc: head + "## Status: question\n" + run + " question=3f9a2c1b question=00000000 call=" + testCall + " -->\n---\n\nQ?\n", asked: true, probs: 2, line: 5},
		{name: "answer whose verdict disagrees", doc: head + "## Status: approved\n" + run + " question=3f9a2c1b verdict=deny -->\n---\n\nNo\n", verdict: "approve", probs: 1, line: 5},
		{name: "answer without verdict", doc: head + "## Status: approved\n" + run + " question=3f9a2c1b -->\n---\n\nNo\n", verdict: "approve", probs: 1, line: 5},
		{name: "answer with unknown verdict", doc: head + "## Status: approved\n" + run + " question=3f9a2c1b verdict=yes -->\n---\n\nNo\n", verdict: "approve", probs: 2, line: 5},
		{name: "answer with a call", doc: head + "## Status: withdrawn\n" + run + " question=3f9a2c1b verdict=withdraw call=" + testCall + " -->\n---\n\nNo\n", verdict: "withdraw", probs: 1, line: 5},
		{name: "reply with question fields", doc: head + run + " question=3f9a2c1b verdict=approve -->\n---\n\nHi\n", probs: 1, line: 4},
		{name: "unknown status", doc: head + "## Status: approve\n" + run + " question=3f9a2c1b verdict=approve -->\n---\n\nHi\n", probs: 2, line: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secs, probs := Parse([]byte(tt.doc))
			if len(secs) != 1 {
				t.Fatalf("Parse = %d sections; want 1", len(secs))
			}
			s := secs[0]
			if s.Asked != tt.asked || s.Verdict != tt.verdict || s.Question != tt.question {
				t.Errorf("Parse = Asked %v Verdict %q Question %q; want %v %q %q", s.Asked, s.Verdict, s.Question, tt.asked, tt.verdict, tt.question)
			}
			if tt.question == "" && s.Call != "" {
				t.Errorf("Call = %q on a section that waits for nothing", s.Call)
			}
			if len(probs) != tt.probs {
				t.Fatalf("problems %s; want %d", problemsString(probs), tt.probs)
			}
			if tt.probs > 0 && probs[0].Line != tt.line {
				t.Errorf("first problem on line %d; want %d (%s)", probs[0].Line, tt.line, problemsString(probs))
			}
			if (tt.asked || tt.verdict != "") && s.IsRun() {
				t.Error("IsRun() = true for a question or an answer")
			}
			if n := len(OpenQuestions(secs)); n != 0 && (!tt.asked || tt.question == "") {
				t.Errorf("OpenQuestions = %d; want none", n)
			}
		})
	}
}

// TestOpenQuestions: a question waits until a later answer of its id, of
// any verdict; an answer before it, or of another id, does not count.
func TestOpenQuestions(t *testing.T) {
	const a, b = "aaaaaaaa", "bbbbbbbb"
	reply := mkSection(9, strand.Modified, "notes/plan.md", "reply")
	paused := mkSection(9, strand.Modified, "notes/plan.md", "paused")
	paused.Paused, paused.RunID = true, ""
	broken := mkQuestion(9, "")
	broken.Call = "" // as Parse leaves a question its marker did not record
	tests := []struct {
		name string
		secs []Section
		want []string // "id@minute"
	}{
		{"none", nil, nil},
		{"only replies", []Section{reply, paused}, nil},
		{"one waits", []Section{reply, mkQuestion(1, a)}, []string{"aaaaaaaa@1"}},
		{"approved", []Section{mkQuestion(1, a), mkAnswer(2, a, "approve")}, nil},
		{"denied", []Section{mkQuestion(1, a), mkAnswer(2, a, "deny")}, nil},
		{"withdrawn", []Section{mkQuestion(1, a), reply, mkAnswer(2, a, "withdraw")}, nil},
		{"answer of another id", []Section{mkQuestion(1, a), mkAnswer(2, b, "approve")}, []string{"aaaaaaaa@1"}},
		{"answer before the question", []Section{mkAnswer(1, a, "approve"), mkQuestion(2, a)}, []string{"aaaaaaaa@2"}},
		{"asked again after an answer", []Section{mkQuestion(1, a), mkAnswer(2, a, "deny"), mkQuestion(3, a)}, []string{"aaaaaaaa@3"}},
		{"asked twice", []Section{mkQuestion(1, a), mkQuestion(2, b), mkQuestion(3, a)}, []string{"bbbbbbbb@2", "aaaaaaaa@3"}},
		{"two, one answered", []Section{mkQuestion(1, a), mkQuestion(2, b), mkAnswer(3, a, "approve")}, []string{"bbbbbbbb@2"}},
		{"a question without id", []Section{broken}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, s := range OpenQuestions(tt.secs) {
				got = append(got, s.Question+"@"+strings.TrimLeft(s.RunID[len(s.RunID)-2:], "0"))
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("OpenQuestions = %v; want %v", got, tt.want)
			}
		})
	}
}

// TestOpenQuestions_FromFile: the tie-off alone, as Append wrote it and
// Parse read it, tells which questions wait.
func TestOpenQuestions_FromFile(t *testing.T) {
	var doc []byte
	for _, s := range []Section{
		mkSection(0, strand.Modified, "notes/plan.md", "A reply."),
		mkQuestion(1, "11111111"),
		mkQuestion(2, "22222222"),
		mkAnswer(3, "11111111", "approve"),
		mkSection(4, strand.Modified, "notes/plan.md", "Done: the file is written."),
	} {
		doc = appendBytes(t, doc, s)
	}
	secs, probs := Parse(doc)
	if len(probs) > 0 {
		t.Fatalf("Parse problems: %s", problemsString(probs))
	}
	open := OpenQuestions(secs)
	if len(open) != 1 || open[0].Question != "22222222" || open[0].Call != testCall || open[0].RunID != mkQuestion(2, "").RunID {
		t.Fatalf("OpenQuestions = %+v; want question 22222222", open)
	}
}

// TestMerge_Questions: questions and answers carry run ids of their own,
// so Merge keeps each once, in time order, and the merged tie-off tells
// the waiting questions as both devices together know them.
func TestMerge_Questions(t *testing.T) {
	q1, q2 := mkQuestion(1, "11111111"), mkQuestion(2, "22222222")
	a1 := mkAnswer(3, "11111111", "approve")
	a2 := mkAnswer(4, "22222222", "withdraw")
	reply := mkSection(5, strand.Modified, "notes/plan.md", "Done.")
	build := func(secs ...Section) []byte {
		var doc []byte
		for _, s := range secs {
			doc = appendBytes(t, doc, s)
		}
		return doc
	}
	// This device saw the approval and the reply; the other withdrew q2.
	original := build(q1, q2, a1, reply)
	conflict := build(q1, q2, a2)
	merged, rep := Merge(original, conflict)
	if !rep.Complete() || rep.Added != 1 || rep.Present != 2 {
		t.Fatalf("Merge report = %+v; want 1 added, 2 present, nothing left out", rep)
	}
	secs, probs := Parse(merged)
	if len(probs) > 0 {
		t.Fatalf("merged problems: %s", problemsString(probs))
	}
	want := []Section{q1, q2, a1, a2, reply}
	if len(secs) != len(want) {
		t.Fatalf("merged = %d sections (%s); want %d", len(secs), runIDs(secs), len(want))
	}
	for i := range want {
		if err := sameSection(secs[i], written(want[i])); err != nil {
			t.Errorf("section %d: %v", i, err)
		}
	}
	if open := OpenQuestions(secs); len(open) != 0 {
		t.Errorf("OpenQuestions(merged) = %+v; want none", open)
	}
	// Either way round, the same.
	back, _ := Merge(conflict, original)
	bsecs, _ := Parse(back)
	if runIDs(bsecs) != runIDs(secs) {
		t.Errorf("Merge(conflict, original) = %s; want %s", runIDs(bsecs), runIDs(secs))
	}
}
