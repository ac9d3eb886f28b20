package tieoff

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
)

// timeLayout is the layout of the Timestamp header: UTC, second precision.
const timeLayout = "2006-01-02T15:04:05Z"

// maxRunIDLen is the longest run id Format accepts.
const maxRunIDLen = 128

// maxSessionLen is the longest session Format accepts.
const maxSessionLen = 128

// ErrInvalid is wrapped by every error about a section that cannot be
// written: an invalid event type, an empty strand path, a zero or
// out-of-range time, a run id or session with characters outside
// [A-Za-z0-9._-] or too long, a hash that is not 64 lower-case hex
// digits, or a hash or session without a run id; for a question or an
// answer, a question id that question.ValidID refuses, a call hash that is
// not 64 lower-case hex digits, an unknown verdict, a missing run id, or
// fields that do not go together.
var ErrInvalid = errors.New("tieoff: invalid section")

// Section is one run's entry in a tie-off.
type Section struct {
	// Event is what happened to the strand.
	Event strand.EventType
	// Strand is the vault-relative, slash-separated path of the strand.
	Strand string
	// Time is when the event happened; it is written in UTC, to the second.
	Time time.Time
	// Failed marks a run that failed; its Body explains why (see Failure).
	Failed bool
	// Paused marks knotd's notice that it paused the note (a breaker
	// tripped): not a run, so never Failed too, and written without a run
	// id. Its Body says why and how to resume the note.
	Paused bool
	// RunID is the run's id (a UUID v7). It may be empty only in sections a
	// user wrote by hand; Format then writes no run marker.
	RunID string
	// Hash is what the run answered: the content hash of the strand
	// version it ran on, as 64 lower-case hex digits of SHA-256; "" when
	// unknown. It is recorded in the run marker (sha256=), so that a
	// device without knotd's state can tell which notes are answered.
	Hash string
	// Session is the note's session UUID (its knot_session); "" when the
	// note has none. At most maxSessionLen bytes of [A-Za-z0-9._-]. It is
	// recorded in the run marker (session=).
	Session string
	// Asked marks a question: a tool call the permission level held for
	// the user's answer (see package question), not a run's reply. It is
	// written "## Status: question" with the marker fields question= and
	// call=, and needs a run id of its own (never the asking run's).
	// Never Failed, Paused or an answer too.
	Asked bool
	// Question is the question's id (question.ValidID) on a question or an
	// answer section; "" on any other. It is recorded in the run marker
	// (question=).
	Question string
	// Call is, on a question section, the hash of the held call
	// (question.Call.Hash: 64 lower-case hex digits), which an approval is
	// bound to; "" on any other. It is recorded in the run marker (call=).
	Call string
	// Verdict makes the section an answer to question Question: "approve",
	// "deny" or "withdraw" (question.Verdict), written "## Status:
	// approved|denied|withdrawn" with the marker fields question= and
	// verdict=; "" on any other section. An answer needs a run id of its
	// own.
	Verdict string
	// Due is, on a Scheduled section, the occurrence of the note's
	// schedule the run stands for (for a late run, the newest of those it
	// stands for); zero on any other. It is recorded in the run marker
	// (due=, Unix seconds), so that a device that takes over answering the
	// vault, without this device's state, neither skips nor repeats an
	// occurrence.
	Due time.Time
	// Body is the agent's reply. Format neutralises it (see the package
	// documentation); Parse returns it as it stands in the file.
	Body string

	// Line is the 1-based line of the section's Event header in the data
	// that was parsed (for Tail, in Window.Text). Format ignores it.
	Line int
	// Offset is the byte offset of the Event header line in the file (or
	// the data) it was read from. Format ignores it.
	Offset int64
	// Torn reports that this is the last section of the file and that its
	// body is shorter than the length recorded in its run marker: a write
	// cut short by a crash, or an edit that removed text. Format ignores it.
	Torn bool
}

// header words, in the order they appear in a section.
const (
	wordEvent     = "Event"
	wordStrand    = "Strand"
	wordTimestamp = "Timestamp"
	wordStatus    = "Status"
)

var headerWords = [...]string{wordEvent, wordStrand, wordTimestamp, wordStatus}

const (
	statusFailed = "failed"
	statusPaused = "paused"
	// statusQuestion is a question's status; an answer's is its verdict's
	// word (see statusOfVerdict).
	statusQuestion = "question"
	markerPrefix   = "<!-- knot:run "
	markerSuffix   = "-->"
	// The marker's fields, in the order Format writes them.
	markerBytes   = "bytes"
	markerHash    = "sha256"
	markerSession = "session"
	// A question's (question, call) and an answer's (question, verdict).
	markerQuestion = "question"
	markerCall     = "call"
	markerVerdict  = "verdict"
	// A scheduled run's occurrence (Unix seconds).
	markerDue = "due"
	// hashLen is the length of a hex SHA-256.
	hashLen = 64
	// headerBreak is what follows the header lines: the thematic break
	// and the blank line before the body.
	headerBreak = "---\n\n"
	// bom is the UTF-8 byte order mark some editors put at the start.
	bom = "\ufeff"
	// separator goes between the end of a body (which ends in a newline)
	// and the next section's Event header.
	separator = "\n---\n\n"
)

// Format returns the bytes of one section as Append writes it, without the
// separator that precedes every section but the first. The body is
// neutralised and ends with a newline unless it is empty.
func Format(s Section) ([]byte, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	body := prepareBody([]byte(s.Body))
	var b bytes.Buffer
	b.Grow(len(body) + 160 + len(s.Strand))
	b.WriteString("## Event: ")
	b.WriteString(s.Event.String())
	b.WriteString("\n## Strand: ")
	b.WriteString(escapeStrand(s.Strand))
	b.WriteString("\n## Timestamp: ")
	b.WriteString(s.Time.UTC().Format(timeLayout))
	b.WriteByte('\n')
	switch {
	case s.Failed:
		b.WriteString("## Status: " + statusFailed + "\n")
	case s.Paused:
		b.WriteString("## Status: " + statusPaused + "\n")
	case s.Asked:
		b.WriteString("## Status: " + statusQuestion + "\n")
	case s.Verdict != "":
		b.WriteString("## Status: " + statusOfVerdict[s.Verdict] + "\n")
	}
	if s.RunID != "" {
		b.WriteString(formatMarker(marker{id: s.RunID, size: len(body), hash: s.Hash, session: s.Session,
			question: s.Question, call: s.Call, verdict: s.Verdict, due: s.Due}))
		b.WriteByte('\n')
	}
	b.WriteString(headerBreak)
	b.Write(body)
	return b.Bytes(), nil
}

func (s Section) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case !s.Event.Valid():
		return bad("event type %v", s.Event)
	case s.Strand == "":
		return bad("empty strand path")
	case s.Time.IsZero():
		return bad("zero time")
	case s.Failed && s.Paused:
		return bad("both failed and paused")
	}
	if y := s.Time.UTC().Year(); y < 1 || y > 9999 {
		return bad("time %v out of range", s.Time)
	}
	if err := validRunID(s.RunID, true); err != nil {
		return err
	}
	if s.RunID == "" && (s.Hash != "" || s.Session != "" || !s.Due.IsZero()) {
		return bad("a hash, session or due time without a run id (there is no run marker to record it in)")
	}
	if !s.Due.IsZero() && s.Event != strand.Scheduled {
		return bad("a due time on a %v section (only a Scheduled run stands for an occurrence)", s.Event)
	}
	if y := s.Due.UTC().Year(); !s.Due.IsZero() && (y < 1970 || y > 9999) {
		return bad("due time %v out of range", s.Due)
	}
	if s.Hash != "" && !validHash(s.Hash) {
		return bad("hash %q is not 64 lower-case hex digits", s.Hash)
	}
	if s.Session != "" {
		if err := validToken("session", s.Session, maxSessionLen); err != nil {
			return err
		}
	}
	return s.validateQuestion()
}

// statusOfVerdict is the Status word of an answer with each verdict, and
// verdictOfStatus its reverse (keys in lower case).
var (
	statusOfVerdict = map[string]string{
		string(question.Approve):  "approved",
		string(question.Deny):     "denied",
		string(question.Withdraw): "withdrawn",
	}
	verdictOfStatus = map[string]string{
		"approved":  string(question.Approve),
		"denied":    string(question.Deny),
		"withdrawn": string(question.Withdraw),
	}
)

// validateQuestion checks the fields of a question or an answer section,
// and that a section that is neither has none of them.
func (s Section) validateQuestion() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	answer := s.Verdict != ""
	switch {
	case !s.Asked && !answer:
		if s.Question != "" || s.Call != "" {
			return bad("a question id or call hash on a section that is neither a question nor an answer")
		}
		return nil
	case s.Asked && answer:
		return bad("both a question and an answer")
	case s.Failed || s.Paused:
		return bad("a question or an answer cannot be failed or paused too")
	case s.RunID == "":
		return bad("a question or an answer without a run id (its marker records its id)")
	case !question.ValidID(s.Question):
		return bad("question id %q is not %d lower-case hex digits", s.Question, question.IDLen)
	case answer && statusOfVerdict[s.Verdict] == "":
		return bad("verdict %q is not approve, deny or withdraw", s.Verdict)
	case answer && s.Call != "":
		return bad("a call hash on an answer (only its question records it)")
	case s.Asked && !validHash(s.Call):
		return bad("call hash %q is not 64 lower-case hex digits", s.Call)
	}
	return nil
}

// IsRun reports whether the section is a run's reply or its failure: not a
// pause notice, a question or an answer, which knotd writes between runs.
func (s Section) IsRun() bool {
	return !s.Paused && !s.Asked && s.Verdict == ""
}

// validRunID checks a run id: at most maxRunIDLen bytes of [A-Za-z0-9._-],
// and not empty unless empty is allowed.
func validRunID(id string, emptyOK bool) error {
	if id == "" {
		if emptyOK {
			return nil
		}
		return fmt.Errorf("%w: empty run id", ErrInvalid)
	}
	return validToken("run id", id, maxRunIDLen)
}

// validToken checks a non-empty run id or session: at most limit bytes
// of [A-Za-z0-9._-].
func validToken(what, v string, limit int) error {
	if len(v) > limit {
		return fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, what, limit)
	}
	for i := 0; i < len(v); i++ {
		if !isTokenByte(v[i]) {
			return fmt.Errorf("%w: %s %q has a character outside [A-Za-z0-9._-]", ErrInvalid, what, v)
		}
	}
	return nil
}

func isTokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

// validHash reports whether h is a SHA-256 as Format writes it: 64
// lower-case hex digits.
func validHash(h string) bool {
	if len(h) != hashLen {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// escapeStrand writes a strand path so that it fits on the header line and
// survives editors: '\' becomes "\\"; control bytes, DEL, bytes that are
// not UTF-8 and a space at either end become "\xHH".
func escapeStrand(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case c < 0x20 || c == 0x7f || c == ' ' && (i == 0 || i == len(p)-1):
			fmt.Fprintf(&b, `\x%02x`, c)
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(p[i:])
			if r == utf8.RuneError && n == 1 {
				fmt.Fprintf(&b, `\x%02x`, c)
			} else {
				b.WriteString(p[i : i+n])
			}
			i += n
			continue
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String()
}

// unescapeStrand reverses escapeStrand. A backslash that starts neither
// "\\" nor "\xHH" is kept as it is.
func unescapeStrand(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' || i+1 >= len(v) {
			b.WriteByte(c)
			continue
		}
		switch {
		case v[i+1] == '\\':
			b.WriteByte('\\')
			i++
		case v[i+1] == 'x' && i+3 < len(v):
			n, err := strconv.ParseUint(v[i+2:i+4], 16, 8)
			if err != nil {
				b.WriteByte(c)
				continue
			}
			b.WriteByte(byte(n))
			i += 3
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// parseHeader reads line (without its line ending) as one of the section
// header lines: up to three spaces, exactly "##", at least one space or
// tab, a header word (any case), optional blanks, ':' and the value. The
// value has the spaces and tabs at both ends removed.
func parseHeader(line []byte) (word string, value []byte, ok bool) {
	i := 0
	for i < len(line) && i < 3 && line[i] == ' ' {
		i++
	}
	if !bytes.HasPrefix(line[i:], []byte("##")) {
		return "", nil, false
	}
	i += 2
	j := skipBlanks(line, i)
	if j == i {
		return "", nil, false
	}
	word, end := headerWordAt(line, j)
	if word == "" {
		return "", nil, false
	}
	return word, trimBlanks(line[end:]), true
}

// headerWordAt reports which header word, followed by optional blanks and
// a colon, starts at line[i], and the index just after the colon.
func headerWordAt(line []byte, i int) (string, int) {
	for _, w := range headerWords {
		if len(line)-i < len(w) || !bytes.EqualFold(line[i:i+len(w)], []byte(w)) {
			continue
		}
		j := skipBlanks(line, i+len(w))
		if j < len(line) && line[j] == ':' {
			return w, j + 1
		}
	}
	return "", 0
}

// isSectionStart reports whether line is an Event header line.
func isSectionStart(line []byte) bool {
	w, _, ok := parseHeader(line)
	return ok && w == wordEvent
}

// marker is what a run marker records.
type marker struct {
	id      string
	size    int    // the reply's length in bytes; -1 when not recorded
	hash    string // "" when not recorded
	session string // "" when not recorded
	// A question's id, and its call hash or its answer's verdict; "" when
	// not recorded.
	question, call, verdict string
	// due is a scheduled run's occurrence; zero when not recorded.
	due time.Time
}

// formatMarker writes a run marker line, without its line ending:
// "<!-- knot:run ID bytes=N sha256=HEX session=S question=Q call=HEX
// verdict=V due=UNIX -->", each field after bytes= only when set, always
// in this order.
func formatMarker(m marker) string {
	var b strings.Builder
	b.WriteString(markerPrefix)
	b.WriteString(m.id)
	b.WriteString(" " + markerBytes + "=")
	b.WriteString(strconv.Itoa(m.size))
	if m.hash != "" {
		b.WriteString(" " + markerHash + "=" + m.hash)
	}
	if m.session != "" {
		b.WriteString(" " + markerSession + "=" + m.session)
	}
	for _, f := range [...]struct{ k, v string }{{markerQuestion, m.question}, {markerCall, m.call}, {markerVerdict, m.verdict}} {
		if f.v != "" {
			b.WriteString(" " + f.k + "=" + f.v)
		}
	}
	if !m.due.IsZero() {
		b.WriteString(" " + markerDue + "=" + strconv.FormatInt(m.due.Unix(), 10))
	}
	b.WriteString(" " + markerSuffix)
	return b.String()
}

// parseMarker reads a run marker line: "<!-- knot:run ID" then fields
// "key=value" separated by blanks, in any order, then "-->". The fields
// it knows are bytes (a decimal length), sha256 (64 lower-case hex digits),
// session (at most maxSessionLen bytes of [A-Za-z0-9._-]), question (an id
// question.ValidID accepts), call (64 lower-case hex digits) and verdict
// (approve, deny or withdraw) and due (Unix seconds); it ignores
// any other key, so that a marker from a newer knotd still reads. A field
// that is not key=value, a key given twice, or a bad value of a known key
// make the marker malformed. The old forms "<!-- knot:run ID -->" and
// "<!-- knot:run ID bytes=N -->" read as before.
func parseMarker(line []byte) (marker, error) {
	t := trimBlanks(line)
	bad := func() (marker, error) { return marker{}, fmt.Errorf("malformed run marker %q", t) }
	if !bytes.HasPrefix(t, []byte(markerPrefix)) || !bytes.HasSuffix(t, []byte(markerSuffix)) {
		return bad()
	}
	fields := strings.Fields(string(t[len(markerPrefix) : len(t)-len(markerSuffix)]))
	if len(fields) == 0 || validRunID(fields[0], false) != nil {
		return bad()
	}
	m := marker{id: fields[0], size: -1}
	seen := make(map[string]bool, len(fields)-1)
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || !validKey(k) || seen[k] {
			return bad()
		}
		seen[k] = true
		switch k {
		case markerBytes:
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || !isDigits(v) {
				return bad()
			}
			m.size = n
		case markerHash:
			if !validHash(v) {
				return bad()
			}
			m.hash = v
		case markerSession:
			if v == "" || validToken(markerSession, v, maxSessionLen) != nil {
				return bad()
			}
			m.session = v
		case markerQuestion:
			if !question.ValidID(v) {
				return bad()
			}
			m.question = v
		case markerCall:
			if !validHash(v) {
				return bad()
			}
			m.call = v
		case markerVerdict:
			if statusOfVerdict[v] == "" {
				return bad()
			}
			m.verdict = v
		case markerDue:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 || n > maxDue || !isDigits(v) {
				return bad()
			}
			m.due = time.Unix(n, 0).UTC()
		}
	}
	return m, nil
}

// maxDue is the largest due= a marker may record: the end of year 9999.
const maxDue = 253402300799

// validKey reports whether k can be a marker field's key: one or more
// bytes of [A-Za-z0-9._-].
func validKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !isTokenByte(k[i]) {
			return false
		}
	}
	return true
}

func isDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return v != ""
}

// isMarkerLine reports whether line is meant as a run marker (well formed
// or not).
func isMarkerLine(line []byte) bool {
	return bytes.HasPrefix(trimBlanks(line), []byte("<!-- knot:"))
}

func skipBlanks(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

func trimBlanks(b []byte) []byte {
	return bytes.Trim(b, " \t\r")
}
