package tieoff

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/vaultfs"
	"github.com/yuin/goldmark/ast"
)

// ParseError is something in a tie-off that Parse could not read as a
// section, or a bad value in a section's headers.
type ParseError struct {
	// Line is the 1-based line where the problem is.
	Line int
	// Msg says what is wrong.
	Msg string
	// Text is the text that belongs to no returned section because of this
	// problem (text before the first section, a section whose headers are
	// broken), as it stands in the file; empty when the text is in a
	// returned section.
	Text string
}

// Error implements error.
func (e ParseError) Error() string { return fmt.Sprintf("tieoff: line %d: %s", e.Line, e.Msg) }

// Read reads and parses the tie-off name (relative to root); see Parse.
// It refuses a name that is a symbolic link (even to a file inside the
// vault) or not a regular file (ErrNotRegular; a FIFO without blocking),
// and a file larger than maxReadSize (ErrTooLarge), which it finds without
// reading more than maxReadSize+1 bytes.
func Read(root *os.Root, name string) ([]Section, []ParseError, error) {
	data, _, err := vaultfs.ReadFile(root, name, maxReadSize)
	if err != nil {
		return nil, nil, fmt.Errorf("tieoff: read %s: %w", name, err)
	}
	secs, probs := Parse(data)
	return secs, probs, nil
}

// Parse reads a tie-off into its sections, oldest first, and reports what
// it could not read. It never fails as a whole and never panics; see the
// package documentation for the rules.
func Parse(data []byte) ([]Section, []ParseError) {
	p := parseDoc(data)
	return p.secs, p.probs
}

// parseDoc parses data as Parse does and keeps where each section's text
// lies (see chunk).
func parseDoc(data []byte) *parse {
	p := &parse{x: newLineIndex(data)}
	if bytes.HasPrefix(data, []byte(bom)) {
		p.base = len(bom) // goldmark does not skip a byte order mark
	}
	for c := parseBlocks(data[p.base:]).FirstChild(); c != nil; c = c.NextSibling() {
		p.kids = append(p.kids, c)
	}
	var starts []int
	known := make(map[int]bool)
	for i, k := range p.kids {
		if w, _ := p.header(k); w == wordEvent {
			starts = append(starts, i)
			known[p.line(k)] = true
		}
	}
	first := len(data)
	if len(starts) > 0 {
		first = p.x.start(p.line(p.kids[starts[0]]))
	}
	p.first = max(first, p.base)
	if pre := data[p.base:max(first, p.base)]; len(bytes.TrimSpace(pre)) > 0 {
		msg := "text before the first section"
		if len(starts) == 0 {
			msg = "no section found"
		}
		lead := p.base + len(pre) - len(bytes.TrimLeft(pre, " \t\r\n"))
		p.problem(p.x.lineOf(lead)+1, msg, string(pre))
	}
	for si, ki := range starts {
		next, end := len(p.kids), len(data)
		if si+1 < len(starts) {
			next = starts[si+1]
			end = p.x.start(p.line(p.kids[next]))
		}
		line := p.line(p.kids[ki])
		c := chunk{start: max(p.x.start(line), p.base), line: line + 1, sec: -1}
		size, bodyEnd, ok := p.section(ki, next, end)
		if ok {
			c.sec, c.end = len(p.secs)-1, bodyEnd
		} else {
			c.end = p.beforeSeparator(ki+1, next, end, c.start)
		}
		p.chunks = append(p.chunks, c)
		if last := len(p.secs) - 1; ok && next == len(p.kids) && size > len(p.secs[last].Body) {
			p.secs[last].Torn = true
			p.problem(p.secs[last].Line, fmt.Sprintf("the last section's reply is %d bytes shorter than written: a crash may have cut the write short, or the text was edited", size-len(p.secs[last].Body)), "")
		}
	}
	for i := range p.x.count() {
		if !known[i] && isSectionStart(p.x.text(i)) {
			p.problem(i+1, "line looks like a section header but is not a top-level heading (a code fence or HTML block opened above is not closed)", "")
		}
	}
	sort.SliceStable(p.probs, func(i, j int) bool { return p.probs[i].Line < p.probs[j].Line })
	return p
}

type parse struct {
	x      *lineIndex
	base   int // offset of what goldmark parsed in x.src: after a BOM
	kids   []ast.Node
	secs   []Section
	probs  []ParseError
	chunks []chunk
	first  int // offset of the first chunk; len(x.src) when there is none
}

// chunk is the text of one top-level Event heading up to the next one (or
// to the end of the file), without the separator before the next one:
// x.src[start:end]. For a section that was read (sec >= 0), end is the end
// of its body; the separator, the rest, carries no words.
type chunk struct {
	start, end int
	line       int // 1-based line of the Event heading
	sec        int // index in secs; -1 when the headers are broken
}

func (p *parse) problem(line int, msg, text string) {
	p.probs = append(p.probs, ParseError{Line: line, Msg: msg, Text: text})
}

// header returns the header word and value of a top-level ATX H2 heading
// that is one of the section headers.
func (p *parse) header(n ast.Node) (string, []byte) {
	h, ok := n.(*ast.Heading)
	if !ok || h.Level != 2 || h.Pos() < 0 {
		return "", nil
	}
	w, v, ok := parseHeader(p.x.text(p.line(h)))
	if !ok {
		return "", nil
	}
	return w, v
}

// section reads the section whose Event heading is kids[ki]; the next
// section starts at kids[next], at byte end. It reports whether it added a
// section, the reply length recorded in its marker (or -1), and the offset
// where its body ends.
func (p *parse) section(ki, next, end int) (size, bodyEnd int, ok bool) {
	x := p.x
	evLine := p.line(p.kids[ki])
	s := Section{Line: evLine + 1, Offset: int64(x.start(evLine))}
	var vals [3][]byte
	k := ki
	for i, want := range []string{wordEvent, wordStrand, wordTimestamp} {
		w, v := "", []byte(nil)
		if k < next {
			w, v = p.header(p.kids[k])
		}
		if w != want {
			p.problem(s.Line, "## Event: is not followed by ## Strand: and ## Timestamp:; the text up to the next section is not read as a section", string(x.src[s.Offset:end]))
			return -1, 0, false
		}
		vals[i] = v
		k++
	}
	ev, err := strand.ParseEventType(string(vals[0]))
	if err != nil {
		p.problem(s.Line, fmt.Sprintf("unknown event %q", vals[0]), "")
	}
	s.Event = ev
	if s.Strand = unescapeStrand(string(vals[1])); s.Strand == "" {
		p.problem(s.Line+1, "empty strand path", "")
	}
	if s.Time, err = parseTime(string(vals[2])); err != nil {
		p.problem(s.Line+2, fmt.Sprintf("bad timestamp %q", vals[2]), "")
	}
	statusLine := s.Line + 2 // the Timestamp line, when there is no Status
	if k < next {
		if w, v := p.header(p.kids[k]); w == wordStatus {
			statusLine = p.line(p.kids[k]) + 1
			st := strings.ToLower(string(v))
			s.Failed = st == statusFailed
			s.Paused = st == statusPaused
			s.Asked = st == statusQuestion
			s.Verdict = verdictOfStatus[st]
			if !s.Failed && !s.Paused && !s.Asked && s.Verdict == "" {
				p.problem(p.line(p.kids[k])+1, fmt.Sprintf("unknown status %q", v), "")
			}
			k++
		}
	}
	size = -1
	markerLine := -1
	var m marker
	if k < next {
		if hb, ok := p.kids[k].(*ast.HTMLBlock); ok && hb.Pos() >= 0 && isMarkerLine(x.text(p.line(hb))) {
			markerLine = p.line(hb)
			var err error
			m, err = parseMarker(x.text(markerLine))
			if err != nil || hb.Lines().Len() != 1 {
				p.problem(markerLine+1, "malformed run marker", "")
			}
			s.RunID, s.Hash, s.Session, size = m.id, m.hash, m.session, m.size
			if !m.due.IsZero() {
				if s.Event == strand.Scheduled {
					s.Due = m.due
				} else {
					p.problem(markerLine+1, "due= in the run marker of a section that is not Scheduled; it is ignored", "")
				}
			}
			k++
		}
	}
	p.questionFields(&s, m, statusLine, markerLine)
	// The body starts after the "---" (or the last header line of a
	// hand-written section without one) and one blank line.
	bodyLine := p.lastLine(p.kids[k-1])
	if k < next {
		if tb, ok := p.kids[k].(*ast.ThematicBreak); ok {
			bodyLine = p.line(tb)
			k++
		}
	}
	bodyStart := x.end(bodyLine)
	if l := bodyLine + 1; l < x.count() && x.start(l) < end && x.blank(l) {
		bodyStart = x.end(l)
	}
	bodyStart = min(bodyStart, end)
	bodyEnd = p.beforeSeparator(k, next, end, bodyStart)
	s.Body = string(x.src[bodyStart:bodyEnd])
	p.secs = append(p.secs, s)
	return size, bodyEnd, true
}

// questionFields gives a question or an answer section (by its Status)
// its id, and a question its call hash, from its marker m (on line
// markerLine, an index, -1 when there is none; statusLine is the 1-based
// line of the Status). When the marker does not record
// them, or records fields that do not fit the Status (a hand edit, a
// forged value), it reports a problem and leaves Question and Call empty:
// such a question waits for nothing and such an answer answers nothing,
// but the section stays a question or an answer, never a reply.
func (p *parse) questionFields(s *Section, m marker, statusLine, markerLine int) {
	line := statusLine
	if markerLine >= 0 {
		line = markerLine + 1
	}
	switch {
	case s.Asked:
		if m.question == "" || m.call == "" || m.verdict != "" {
			p.problem(line, "a question's run marker must record question=ID and call=HASH, and no verdict; it waits for no answer", "")
			return
		}
		s.Question, s.Call = m.question, m.call
	case s.Verdict != "":
		if m.question == "" || m.call != "" || m.verdict != s.Verdict {
			p.problem(line, fmt.Sprintf("an answer's run marker must record question=ID and verdict=%s, and no call; it answers no question", s.Verdict), "")
			return
		}
		s.Question = m.question
	case m.question != "" || m.call != "" || m.verdict != "":
		p.problem(line, "question=, call= or verdict= in the run marker of a section that is neither a question nor an answer; they are ignored", "")
	}
}

// beforeSeparator returns where text that runs up to the next section
// (kids[next], at byte end) stops when the separator before it is left
// out: before kids[next-1] if it is a thematic break and its index is at
// least from, and before the blank line above that break; never before
// floor.
func (p *parse) beforeSeparator(from, next, end, floor int) int {
	x := p.x
	if next < len(p.kids) && next-1 >= from {
		if tb, ok := p.kids[next-1].(*ast.ThematicBreak); ok {
			l := p.line(tb)
			e := max(x.start(l), floor)
			if l > 0 && x.blank(l-1) && x.start(l-1) >= floor {
				e = x.start(l - 1)
			}
			return e
		}
	}
	return end
}

// lastLine returns the index of the last line of a top-level block.
func (p *parse) lastLine(n ast.Node) int {
	if n.Type() == ast.TypeBlock {
		if l := n.Lines(); l.Len() > 0 {
			return p.x.lineOf(p.base + l.At(l.Len()-1).Start)
		}
	}
	return p.line(n)
}

// line returns the index of the line where block n starts.
func (p *parse) line(n ast.Node) int { return p.x.lineOf(p.base + max(n.Pos(), 0)) }

// parseTime reads a Timestamp value: timeLayout, or any RFC 3339 time a
// user may have typed; the result is in UTC.
func parseTime(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// lineIndex finds lines in a document. Lines end with '\n'; a '\r' before
// it is not part of the line's text.
type lineIndex struct {
	src    []byte
	starts []int // start offset of every line; a final '\n' starts no line
}

func newLineIndex(src []byte) *lineIndex {
	starts := make([]int, 1, bytes.Count(src, []byte("\n"))+1)
	for i, c := range src {
		if c == '\n' && i+1 < len(src) {
			starts = append(starts, i+1)
		}
	}
	return &lineIndex{src: src, starts: starts}
}

func (x *lineIndex) count() int { return len(x.starts) }

// lineOf returns the index of the line holding byte off.
func (x *lineIndex) lineOf(off int) int {
	return sort.Search(len(x.starts), func(i int) bool { return x.starts[i] > off }) - 1
}

func (x *lineIndex) start(i int) int { return x.starts[i] }

// end returns the offset just after line i's line ending.
func (x *lineIndex) end(i int) int {
	if i+1 < len(x.starts) {
		return x.starts[i+1]
	}
	return len(x.src)
}

// text returns line i without its line ending (and the first line without
// a byte order mark).
func (x *lineIndex) text(i int) []byte {
	t := x.src[x.start(i):x.end(i)]
	if i == 0 {
		t = bytes.TrimPrefix(t, []byte(bom))
	}
	t = bytes.TrimSuffix(t, []byte("\n"))
	return bytes.TrimSuffix(t, []byte("\r"))
}

func (x *lineIndex) blank(i int) bool { return len(bytes.Trim(x.text(i), " \t")) == 0 }
