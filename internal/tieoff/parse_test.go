package tieoff

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/strand"
)

// threeSections is a tie-off of three sections, as Append writes it.
func threeSections(t *testing.T) ([]Section, []byte) {
	t.Helper()
	in := []Section{
		mkSection(0, strand.Created, "n.md", "First reply.\n\n- a\n- b\n"),
		mkSection(1, strand.Modified, "n.md", "Second reply.\n"),
		mkSection(2, strand.Modified, "n.md", "Third reply.\n"),
	}
	var doc []byte
	for i, s := range in {
		if i > 0 {
			doc = append(doc, separator...)
		}
		doc = append(doc, mustFormat(t, s)...)
	}
	return in, doc
}

func problemsString(probs []ParseError) string {
	var b strings.Builder
	for _, p := range probs {
		fmt.Fprintf(&b, "%d: %s [%q]; ", p.Line, p.Msg, p.Text)
	}
	return b.String()
}

// TestParse_HandEdited covers edits a user makes to a tie-off in an
// editor: the sections still parse, and what cannot be read is reported
// with its line and keeps its text.
func TestParse_HandEdited(t *testing.T) {
	in, doc := threeSections(t)
	s := string(doc)
	second := strings.Index(s, "## Event: Modified")
	third := strings.LastIndex(s, "## Event: Modified")
	secondLine := strings.Count(s[:second], "\n") + 1

	tests := []struct {
		name     string
		doc      string
		bodies   []string // want bodies, in order
		problems []int    // want problem lines
		text     string   // a problem's Text must contain this
	}{
		{
			name:   "as written",
			doc:    s,
			bodies: []string{in[0].Body, in[1].Body, in[2].Body},
		},
		{
			name:   "middle section deleted",
			doc:    s[:second] + s[third:],
			bodies: []string{in[0].Body, in[2].Body},
		},
		{
			name:   "note added between sections belongs to the section above",
			doc:    s[:second] + "My own note.\n\n" + s[second:],
			bodies: []string{in[0].Body + "\n---\n\nMy own note.\n\n", in[1].Body, in[2].Body},
		},
		{
			name:   "text changed",
			doc:    strings.Replace(s, "Second reply.", "Second reply, edited\nover two lines.", 1),
			bodies: []string{in[0].Body, "Second reply, edited\nover two lines.\n", in[2].Body},
		},
		{
			name:   "separator removed",
			doc:    strings.Replace(s, "Second reply.\n\n---\n\n", "Second reply.\n\n", 1),
			bodies: []string{in[0].Body, "Second reply.\n\n", in[2].Body},
		},
		{
			name:     "text before the first section",
			doc:      "A heading I wrote\n\n" + s,
			bodies:   []string{in[0].Body, in[1].Body, in[2].Body},
			problems: []int{1},
			text:     "A heading I wrote",
		},
		{
			name:     "broken header triple",
			doc:      strings.Replace(s, "## Strand: n.md\n## Timestamp: 2026-11-21T19:31:05Z", "## Strand: n.md\nI deleted the timestamp", 1),
			bodies:   []string{in[0].Body, in[2].Body},
			problems: []int{secondLine},
			text:     "Second reply.",
		},
		{
			name:     "unknown event keeps the section",
			doc:      strings.Replace(s, "## Event: Created", "## Event: Renamed", 1),
			bodies:   []string{in[0].Body, in[1].Body, in[2].Body},
			problems: []int{1},
		},
		{
			name:     "bad timestamp",
			doc:      strings.Replace(s, "2026-11-21T19:30:05Z", "yesterday", 1),
			bodies:   []string{in[0].Body, in[1].Body, in[2].Body},
			problems: []int{3},
		},
		{
			name:     "malformed marker",
			doc:      strings.Replace(s, "bytes=", "bytes=x", 1),
			bodies:   []string{in[0].Body, in[1].Body, in[2].Body},
			problems: []int{4},
		},
		{
			name:   "unknown marker field is ignored",
			doc:    strings.Replace(s, "bytes=", "bites=", 1),
			bodies: []string{in[0].Body, in[1].Body, in[2].Body},
		},
		{
			name:     "no sections at all",
			doc:      "\n\nJust notes.\n",
			problems: []int{3},
			text:     "Just notes.",
		},
		{
			name:   "empty",
			doc:    "",
			bodies: nil,
		},
		{
			name:     "user left a fence open, swallowing the next headers",
			doc:      strings.Replace(s, "Second reply.\n", "Second reply.\n```\n", 1),
			bodies:   []string{in[0].Body, "Second reply.\n```\n\n---\n\n" + s[third:]},
			problems: []int{strings.Count(s[:third], "\n") + 2},
		},
		{
			name:     "section typed by hand without marker or rule",
			doc:      s + "\n---\n\n## Event: Modified\n## Strand: n.md\n## Timestamp: 2026-11-22T08:00:00+01:00\n\nBy hand.\n",
			bodies:   []string{in[0].Body, in[1].Body, in[2].Body, "By hand.\n"},
			problems: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secs, probs := Parse([]byte(tt.doc))
			var bodies []string
			for _, s := range secs {
				bodies = append(bodies, s.Body)
			}
			if fmt.Sprintf("%q", bodies) != fmt.Sprintf("%q", tt.bodies) {
				t.Errorf("Parse bodies = %q; want %q", bodies, tt.bodies)
			}
			var lines []int
			for _, p := range probs {
				lines = append(lines, p.Line)
			}
			if fmt.Sprint(lines) != fmt.Sprint(tt.problems) {
				t.Errorf("Parse problem lines = %v; want %v (%s)", lines, tt.problems, problemsString(probs))
			}
			if tt.text != "" && !strings.Contains(problemsString(probs), tt.text) {
				t.Errorf("no problem keeps the text %q: %s", tt.text, problemsString(probs))
			}
		})
	}
}

func TestParse_Fields(t *testing.T) {
	doc := "## Event: deleted\n## Strand: a\\x0ab\\\\c.md\n## Timestamp: 2026-11-22T08:00:00.5+01:00\n## Status: FAILED\n" +
		"<!-- knot:run r-1 -->\n---\n\nbody\n"
	secs, probs := Parse([]byte(doc))
	if len(probs) > 0 || len(secs) != 1 {
		t.Fatalf("Parse = %d sections, %s", len(secs), problemsString(probs))
	}
	want := Section{Event: strand.Deleted, Strand: "a\nb\\c.md", Time: time.Date(2026, 11, 22, 7, 0, 0, 5e8, time.UTC), Failed: true, RunID: "r-1", Body: "body\n"}
	if err := sameSection(secs[0], want); err != nil {
		t.Error(err)
	}
	if secs[0].Time.Location() != time.UTC {
		t.Errorf("Time location = %v; want UTC", secs[0].Time.Location())
	}
	if _, probs := Parse([]byte(strings.Replace(doc, "FAILED", "maybe", 1))); len(probs) != 1 || probs[0].Line != 4 {
		t.Errorf("unknown status: problems %s; want one on line 4", problemsString(probs))
	}
}

// TestParse_CRLF reads a tie-off an editor saved with CRLF line endings.
func TestParse_CRLF(t *testing.T) {
	in, doc := threeSections(t)
	crlf := bytes.ReplaceAll(doc, []byte("\n"), []byte("\r\n"))
	secs, probs := Parse(crlf)
	if len(probs) > 0 || len(secs) != 3 {
		t.Fatalf("Parse(CRLF) = %d sections, %s", len(secs), problemsString(probs))
	}
	for i := range in {
		want := written(in[i])
		want.Body = strings.ReplaceAll(want.Body, "\n", "\r\n")
		if err := sameSection(secs[i], want); err != nil {
			t.Errorf("section %d: %v", i, err)
		}
	}
	if secs[2].Torn {
		t.Error("CRLF section marked Torn")
	}
}

// TestParse_BOM reads a tie-off an editor saved with a byte order mark.
func TestParse_BOM(t *testing.T) {
	in, doc := threeSections(t)
	withBOM := append([]byte(bom), doc...)
	secs, probs := Parse(withBOM)
	if len(probs) > 0 || len(secs) != 3 {
		t.Fatalf("Parse(BOM) = %d sections, %s", len(secs), problemsString(probs))
	}
	for i := range in {
		if err := sameSection(secs[i], written(in[i])); err != nil {
			t.Errorf("section %d: %v", i, err)
		}
	}
	root, dir := testVault(t)
	if err := os.WriteFile(filepath.Join(dir, "bom.tieoff.md"), withBOM, 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err := Tail(root, "bom.tieoff.md", 5, 0); err != nil || len(w.Sections) != 3 || w.Start != 0 {
		t.Errorf("Tail(BOM) = %d sections from %d, %v; want all 3 from 0", len(w.Sections), w.Start, err)
	}
	if _, err := Parse(append([]byte(bom), "text\n"...)); len(err) != 1 || err[0].Line != 1 {
		t.Errorf("Parse(BOM and text) problems = %s; want one on line 1", problemsString(err))
	}
}

// TestParse_Torn reads a file whose last section a crash cut short.
func TestParse_Torn(t *testing.T) {
	_, doc := threeSections(t)
	cut := doc[:len(doc)-5]
	secs, probs := Parse(cut)
	if len(secs) != 3 || !secs[2].Torn || secs[0].Torn || secs[1].Torn {
		t.Fatalf("Parse(cut) = %+v; want the last of 3 sections Torn", secs)
	}
	if len(probs) != 1 || probs[0].Line != secs[2].Line || !strings.Contains(probs[0].Msg, "5 bytes shorter") {
		t.Fatalf("problems = %s; want one about 5 missing bytes on line %d", problemsString(probs), secs[2].Line)
	}
	if got, want := probs[0].Error(), fmt.Sprintf("tieoff: line %d: the last section's reply is 5 bytes shorter", secs[2].Line); !strings.HasPrefix(got, want) {
		t.Errorf("Error() = %q; want prefix %q", got, want)
	}
	// A user who adds to the last section does not make it torn.
	if secs, probs := Parse(append(bytes.Clone(doc), "more\n"...)); secs[2].Torn || len(probs) > 0 {
		t.Errorf("longer last section: Torn = %v, problems %s", secs[2].Torn, problemsString(probs))
	}
}

func TestStrandEscape(t *testing.T) {
	tests := []struct{ path, header string }{
		{"ideas/plan.md", "ideas/plan.md"},
		{"with space/🎉 ünï.md", "with space/🎉 ünï.md"},
		{"-dash.md", "-dash.md"},
		{"a\nb.md", `a\x0ab.md`},
		{"a\r\tb\x7f.md", `a\x0d\x09b\x7f.md`},
		{`back\slash`, `back\\slash`},
		{` both ends `, `\x20both ends\x20`},
		{"bad\xffutf8", `bad\xffutf8`},
		{`\x41`, `\\x41`},
	}
	for _, tt := range tests {
		if got := escapeStrand(tt.path); got != tt.header {
			t.Errorf("escapeStrand(%q) = %q; want %q", tt.path, got, tt.header)
		}
		if got := unescapeStrand(tt.header); got != tt.path {
			t.Errorf("unescapeStrand(%q) = %q; want %q", tt.header, got, tt.path)
		}
	}
	// Hand-typed backslashes that are not escapes stay.
	for _, v := range []string{`a\b`, `a\`, `a\x4`, `a\xzz`} {
		if got := unescapeStrand(v); got != v {
			t.Errorf("unescapeStrand(%q) = %q; want it unchanged", v, got)
		}
	}
}

func TestFormat_Invalid(t *testing.T) {
	ok := mkSection(0, strand.Created, "a.md", "x")
	tests := []struct {
		name string
		edit func(*Section)
	}{
		{"zero event", func(s *Section) { s.Event = 0 }},
		{"bad event", func(s *Section) { s.Event = 9 }},
		{"empty strand", func(s *Section) { s.Strand = "" }},
		{"zero time", func(s *Section) { s.Time = time.Time{} }},
		{"far future", func(s *Section) { s.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"run id with space", func(s *Section) { s.RunID = "a b" }},
		{"run id closing comment", func(s *Section) { s.RunID = "x-->" }},
		{"run id too long", func(s *Section) { s.RunID = strings.Repeat("a", maxRunIDLen+1) }},
		{"hash too short", func(s *Section) { s.Hash = testHash[:63] }},
		{"hash too long", func(s *Section) { s.Hash = testHash + "0" }},
		{"hash upper case", func(s *Section) { s.Hash = strings.ToUpper(testHash) }},
		{"hash not hex", func(s *Section) { s.Hash = "g" + testHash[1:] }},
		{"session with space", func(s *Section) { s.Session = "a b" }},
		{"session closing comment", func(s *Section) { s.Session = "x-->" }},
		{"session with equals", func(s *Section) { s.Session = "a=b" }},
		{"session too long", func(s *Section) { s.Session = strings.Repeat("s", maxSessionLen+1) }},
		{"hash without run id", func(s *Section) { s.RunID, s.Hash = "", testHash }},
		{"session without run id", func(s *Section) { s.RunID, s.Session = "", testSession }},
	}
	for _, tt := range tests {
		s := ok
		tt.edit(&s)
		if _, err := Format(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("Format(%s) = %v; want ErrInvalid", tt.name, err)
		}
	}
	if _, err := Format(ok); err != nil {
		t.Errorf("Format(valid) = %v", err)
	}
	// A section written by hand has no run id; it is written without marker.
	s := ok
	s.RunID = ""
	if b := mustFormat(t, s); bytes.Contains(b, []byte("<!--")) {
		t.Errorf("Format without run id = %q; want no marker", b)
	}
}

// TestParse_Concurrent: the shared goldmark parser is safe for concurrent
// use (run with -race).
func TestParse_Concurrent(t *testing.T) {
	_, doc := threeSections(t)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if secs, probs := Parse(doc); len(secs) != 3 || len(probs) > 0 {
					errs <- fmt.Sprintf("Parse = %d sections, %s", len(secs), problemsString(probs))
					return
				}
				if _, err := Format(mkSection(0, strand.Created, "a.md", "```\nx")); err != nil {
					errs <- err.Error()
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestPausedNotice_RoundTrip: a pause notice is written with "## Status:
// paused" and no run marker, and read back as Paused, not Failed; a
// section cannot be both.
func TestPausedNotice_RoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	b, err := Format(Section{Event: strand.Modified, Strand: "a.md", Time: at, Paused: true, Body: "knotd paused this note."})
	if err != nil {
		t.Fatal(err)
	}
	want := "## Event: Modified\n## Strand: a.md\n## Timestamp: 2026-11-23T10:00:00Z\n## Status: paused\n---\n\nknotd paused this note.\n"
	if string(b) != want {
		t.Fatalf("Format = %q; want %q", b, want)
	}
	secs, problems := Parse(b)
	if len(problems) > 0 || len(secs) != 1 || !secs[0].Paused || secs[0].Failed || secs[0].RunID != "" {
		t.Errorf("Parse = %+v, %v; want one paused section without a run id", secs, problems)
	}
	if _, err := Format(Section{Event: strand.Modified, Strand: "a.md", Time: at, Paused: true, Failed: true}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Format of a section both failed and paused: %v; want ErrInvalid", err)
	}
}
