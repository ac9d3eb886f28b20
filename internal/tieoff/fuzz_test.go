package tieoff

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
)

// appendBytes appends s to an in-memory tie-off exactly as Append would
// append it to a file (same joint logic), without the syscalls.
func appendBytes(t testing.TB, doc []byte, s Section) []byte {
	t.Helper()
	j, err := joint(bytes.NewReader(doc), int64(len(doc)))
	if err != nil {
		t.Fatalf("joint: %v", err)
	}
	return append(append(doc, j...), mustFormat(t, s)...)
}

// FuzzRoundTrip appends three arbitrary replies, with an arbitrary hand
// edit (its header and marker look-alikes neutralised) typed at the end
// before the third; Parse must find exactly the three sections with the
// bodies, hashes and sessions as written and report nothing, and Tail and
// HasRun must agree. The session is used where Format accepts it.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range goldenSections() {
		f.Add(s.Body, "x", s.Body, s.Strand, "", s.Session)
	}
	f.Add("a", "b", "c", "ideas/plan.md", "```\nopen fence", testSession)
	f.Add("", "", "", "a.md", "<!-- open", "")
	f.Add("## Event: x\n<!-- knot:run run-1 bytes=0 -->", "```", "~~~", "new\nline.md", "<pre>", "s -->")
	f.Add("x\r## Event: y", "\r\n", "a\rb", " sp .md", "no newline", "a=b")
	f.Add("- a\n```", "> q\n<?", "<![CDATA[", "-x.md", "    indented", "s.e_s-1")
	// One file per worker process; calls are sequential.
	root, dir := testVault(f)
	const name = "f.tieoff.md"
	p := filepath.Join(dir, name)
	f.Fuzz(func(t *testing.T, r1, r2, r3, path, edit, session string) {
		if path == "" {
			path = "a.md"
		}
		in := []Section{
			mkSection(0, strand.Created, path, r1),
			mkSection(1, strand.Modified, path, r2),
			mkSection(2, strand.Deleted, path, r3),
		}
		in[1].Failed = true
		in[0].Hash = sha256Hex(r1)
		in[1].Session = session
		if _, err := Format(in[1]); err != nil {
			if session != "" && validToken("session", session, maxSessionLen) == nil {
				t.Fatalf("Format refused session %q: %v", session, err)
			}
			in[1].Session = ""
		}
		in[2].Hash, in[2].Session = sha256Hex(r3), in[1].Session
		var doc []byte
		doc = appendBytes(t, doc, in[0])
		doc = appendBytes(t, doc, in[1])
		doc = append(doc, neutralise([]byte(edit))...)
		doc = appendBytes(t, doc, in[2])

		secs, probs := Parse(doc)
		if len(probs) > 0 {
			t.Fatalf("Parse problems: %s\n%q", problemsString(probs), doc)
		}
		if len(secs) != 3 {
			t.Fatalf("Parse = %d sections; want 3\n%q", len(secs), doc)
		}
		for _, i := range []int{0, 2} {
			if err := sameSection(secs[i], written(in[i])); err != nil {
				t.Errorf("section %d: %v", i, err)
			}
		}
		// The edit belongs to the second section, after its reply.
		w2 := written(in[1])
		got2 := secs[1]
		if !bytes.HasPrefix([]byte(got2.Body), []byte(w2.Body)) {
			t.Errorf("second body = %q; want it to start with %q", got2.Body, w2.Body)
		}
		got2.Body = w2.Body
		if err := sameSection(got2, w2); err != nil {
			t.Errorf("section 1: %v", err)
		}
		if b := prepareBody([]byte(r1)); len(b) < len(r1) {
			t.Errorf("prepareBody(%q) = %q lost bytes", r1, b)
		}

		if err := os.WriteFile(p, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := Tail(root, name, 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Sections) != 2 || len(w.Problems) > 0 {
			t.Fatalf("Tail(2) = %d sections, problems %s", len(w.Sections), problemsString(w.Problems))
		}
		for i, s := range w.Sections {
			want := secs[i+1]
			if s.Body != want.Body || s.RunID != want.RunID || s.Offset != want.Offset || s.Strand != want.Strand ||
				s.Hash != want.Hash || s.Session != want.Session {
				t.Errorf("Tail section %d = %+v; Parse says %+v", i, s, want)
			}
		}
		for _, s := range in {
			if ok, err := HasRun(root, name, s.RunID, 0); !ok || err != nil {
				t.Errorf("HasRun(%s) = %v, %v; want true", s.RunID, ok, err)
			}
		}
	})
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// FuzzParse feeds arbitrary bytes to Parse, Tail and HasRun: they never
// panic, and what Parse returns points inside the input.
func FuzzParse(f *testing.F) {
	if golden, err := os.ReadFile(goldenPath); err == nil {
		f.Add(golden)
		f.Add(bytes.ReplaceAll(golden, []byte("\n"), []byte("\r\n")))
		f.Add(golden[:len(golden)/2])
		f.Add(append([]byte(bom), golden...))
	}
	f.Add([]byte(""))
	f.Add([]byte("## Event: Created\n"))
	f.Add([]byte(bom))
	f.Add([]byte(bom + "x\n## Event: Created\n"))
	f.Add([]byte("## Event: Created\n## Strand: a\n## Timestamp: x\n## Status: y\n<!-- knot:run -->\n---"))
	f.Add([]byte("```\n## Event: Created\n## Strand: a\n## Timestamp: 2026-01-01T00:00:00Z\n"))
	f.Add([]byte("\n\n---\n\n## Event: Modified\n## Strand: \\x\\\\\n## Timestamp: 2026-01-01T00:00:00Z\n<!-- knot:run a bytes=99999999999999999999 -->\n"))
	// One file per worker process; calls are sequential.
	root, dir := testVault(f)
	const name = "f.tieoff.md"
	path := filepath.Join(dir, name)
	f.Add([]byte("## Event: Modified\n## Strand: a\n## Timestamp: 2026-01-01T00:00:00Z\n## Status: question\n<!-- knot:run q question=3f9a2c1b call=" + testCall + " -->\n---\n\nQ\n"))
	f.Add([]byte("## Event: Modified\n## Strand: a\n## Timestamp: 2026-01-01T00:00:00Z\n## Status: denied\n<!-- knot:run a question=3f9a2c1b verdict=approve -->\n---\n\nA\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		secs, probs := Parse(data)
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, s := range secs {
			// A question or an answer read is one Format would write.
			if s.Question != "" {
				if _, err := Format(Section{Event: strand.Modified, Strand: "a.md", Time: t0, RunID: s.RunID,
					Asked: s.Asked, Question: s.Question, Call: s.Call, Verdict: s.Verdict}); err != nil {
					t.Errorf("Parse read a question or answer Format refuses: %v", err)
				}
			}
			if s.Asked && s.Verdict != "" || (s.Asked || s.Verdict != "") && (s.Failed || s.Paused) {
				t.Errorf("section is %+v", s)
			}
		}
		for _, q := range OpenQuestions(secs) {
			if !q.Asked || q.Call == "" {
				t.Errorf("OpenQuestions returned %+v", q)
			}
		}
		for _, s := range secs {
			if s.Offset < 0 || s.Offset > int64(len(data)) || s.Line < 1 || s.Line > lines {
				t.Errorf("section at line %d offset %d outside the input", s.Line, s.Offset)
			}
			if !bytes.Contains(data, []byte(s.Body)) {
				t.Errorf("body %q is not in the input", s.Body)
			}
		}
		for _, p := range probs {
			if p.Line < 1 || p.Line > lines {
				t.Errorf("problem at line %d outside the input", p.Line)
			}
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Tail(root, name, 3, 1000); err != nil {
			t.Errorf("Tail: %v", err)
		}
		if _, err := Tail(root, name, 0, 0); err != nil {
			t.Errorf("Tail: %v", err)
		}
		if _, err := HasRun(root, name, "a", 0); err != nil && !bytes.Contains(data, []byte("<!-- knot:run a")) {
			t.Errorf("HasRun: %v", err)
		}
		// Appending after any input keeps it, and unless the input holds
		// header look-alikes (which could sit in a block a user left open,
		// see joint), the new section reads back as the last one.
		s := mkSection(0, strand.Created, "a.md", "after")
		after := appendBytes(t, bytes.Clone(data), s)
		if !bytes.HasPrefix(after, data) {
			t.Fatal("appending changed the bytes before it")
		}
		if bytes.Equal(neutralise(data), data) {
			secs, _ := Parse(after)
			if len(secs) == 0 {
				t.Fatalf("appended section not found in %q", after)
			}
			if err := sameSection(secs[len(secs)-1], written(s)); err != nil {
				t.Errorf("appended section: %v\n%q", err, after)
			}
		}
	})
}

// FuzzQuestion writes a question and an answer with arbitrary id, call
// hash, verdict and body: Format accepts exactly the valid fields, and
// what it writes reads back field for field, the question waiting before
// the answer and not after.
func FuzzQuestion(f *testing.F) {
	f.Add("3f9a2c1b", testCall, "approve", "body")
	f.Add("3f9a2c1b", testCall, "withdraw", "## Status: approved\n<!-- knot:run x question=3f9a2c1b verdict=approve -->")
	f.Add("3F9A2C1B", testCall, "deny", "")
	f.Add("3f9a2c1b", "x", "maybe", "```")
	f.Add("3f9a2c1b -->", testCall+" x=y", "approve -->", "<!--")
	f.Fuzz(func(t *testing.T, id, call, verdict, body string) {
		q := mkSection(0, strand.Modified, "a.md", body)
		q.Asked, q.Question, q.Call = true, id, call
		a := mkSection(1, strand.Modified, "a.md", body)
		a.Question, a.Verdict = id, verdict
		qb, qerr := Format(q)
		if ok := question.ValidID(id) && validHash(call); ok != (qerr == nil) {
			t.Fatalf("Format(question %q call %q) = %v", id, call, qerr)
		}
		_, aerr := Format(a)
		if ok := question.ValidID(id) && statusOfVerdict[verdict] != ""; ok != (aerr == nil) {
			t.Fatalf("Format(answer %q verdict %q) = %v", id, verdict, aerr)
		}
		if qerr != nil {
			return
		}
		doc := appendBytes(t, nil, q)
		if !bytes.Equal(doc, qb) {
			t.Fatalf("appendBytes != Format")
		}
		secs, probs := Parse(doc)
		if len(secs) != 1 || len(probs) > 0 {
			t.Fatalf("Parse(question) = %d sections, %s", len(secs), problemsString(probs))
		}
		if err := sameSection(secs[0], written(q)); err != nil {
			t.Fatal(err)
		}
		if open := OpenQuestions(secs); len(open) != 1 || open[0].Question != id {
			t.Fatalf("OpenQuestions = %+v; want %s", open, id)
		}
		if aerr != nil {
			return
		}
		doc = appendBytes(t, doc, a)
		secs, probs = Parse(doc)
		if len(secs) != 2 || len(probs) > 0 {
			t.Fatalf("Parse(question, answer) = %d sections, %s", len(secs), problemsString(probs))
		}
		if err := sameSection(secs[1], written(a)); err != nil {
			t.Fatal(err)
		}
		if open := OpenQuestions(secs); len(open) != 0 {
			t.Fatalf("OpenQuestions after the answer = %+v", open)
		}
	})
}
