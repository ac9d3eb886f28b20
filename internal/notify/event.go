// Package notify tells the user, without their looking, what knotd needs
// them for: a question that waits for an answer, a run that failed, a note
// that knotd paused (a breaker, the budget). An Event goes to every
// configured Sink: the desktop (freedesktop notifications over the session
// D-Bus on Linux and the BSDs, `osascript` on macOS), a command (argv,
// never a shell; the event as JSON on its stdin) and an HTTP POST in ntfy's
// style.
//
// A Notifier sends each event once (by its ID) and never blocks the caller:
// Notify queues, and the one goroutine of Run sends. At most PerMinute
// notifications go out in a minute; the rest, and whatever a full queue
// could not hold, are coalesced into one notification that counts them.
// A sink that fails is logged; nothing a sink does fails a run.
package notify

import (
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Kind is what an event tells.
type Kind string

// The kinds of event.
const (
	// KindQuestion: an agent's call waits for the user's answer.
	KindQuestion Kind = "question"
	// KindFailed: a run failed (its failure section is in the tie-off).
	KindFailed Kind = "failed"
	// KindPaused: knotd paused a note (a breaker tripped) or its changes
	// wait for the day's budget.
	KindPaused Kind = "paused"
	// KindCoalesced: the events a storm limit held back, counted in one.
	KindCoalesced Kind = "coalesced"
)

// Event is one thing to tell the user. Its JSON is what a notify command
// reads on stdin (docs/operating.md#notifications).
type Event struct {
	Kind Kind `json:"kind"`
	// ID makes the event once-only: a Notifier sends an ID once.
	ID string `json:"id"`
	// Vault is the vault's root; Note the vault-relative, slash-separated
	// path of the note ("" for a coalesced event).
	Vault string `json:"vault"`
	Note  string `json:"note,omitempty"`
	// Title and Message are what a person reads on a lock screen: short,
	// plain text, bounded.
	Title   string    `json:"title"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
	// Question is the waiting question (KindQuestion only).
	Question *QuestionInfo `json:"question,omitempty"`
	// Counts are the events a coalesced event stands for, by kind.
	Counts map[Kind]int `json:"counts,omitempty"`
}

// QuestionInfo is the question an event of KindQuestion tells of.
type QuestionInfo struct {
	// ID is the question's id (8 hex digits), which an answer names.
	ID string `json:"id"`
	// Summary says what the agent asks to do ("edit notes/plan.md").
	Summary string `json:"summary"`
}

// Bounds of what an event says: a lock screen shows a line or two.
const (
	maxTitle   = 120
	maxMessage = 600
)

// Question is the event of a question that waits: the agent working on
// note (vault-relative) asks to do what summary says, and the question's
// id is what an answer names.
func Question(vault, note, id, summary string, machineOnly bool, at time.Time) Event {
	summary = clean(summary, maxMessage/2)
	how := ". To answer, add to the note's frontmatter: knot_answer: approve " + id +
		" (or deny " + id + " and your reason); or run knotd approve " + id + " / knotd deny " + id
	if machineOnly {
		// answers_from: machine: an answer in the note is not taken.
		how = ". To answer, run knotd approve " + id + " / knotd deny " + id + " on the machine that runs knotd, or use its console"
	}
	return Event{
		Kind: KindQuestion, ID: "question/" + id, Vault: vault, Note: note, Time: at.UTC(),
		Title:    clean("knotd asks: "+summary, maxTitle),
		Message:  clean(noteName(vault, note)+": "+summary+how, maxMessage),
		Question: &QuestionInfo{ID: id, Summary: summary},
	}
}

// Failed is the event of a failed run of note: runID names the run (its
// failure section is in the tie-off); without one (knotd could not process
// the note at all) the event is once per note and reason.
func Failed(vault, note, runID, reason string, at time.Time) Event {
	id, more := "failed/"+runID, " (the note's tie-off says more; knotd retry "+note+" runs it again)"
	if runID == "" {
		id, more = "failed/"+note+"/"+clean(reason, maxMessage), " (knotd's log says more)"
	}
	return Event{
		Kind: KindFailed, ID: id, Vault: vault, Note: note, Time: at.UTC(),
		Title:   clean("knotd: a run failed: "+noteName(vault, note), maxTitle),
		Message: clean(clean(reason, maxMessage-utf8.RuneCountInString(more))+more, maxMessage),
	}
}

// Paused is the event of a note knotd paused, or whose changes wait for
// the budget: why says why, id makes it once-only (a pause, a budget's
// cap on a day), and resume how it goes on.
func Paused(vault, note, id, why, resume string, at time.Time) Event {
	return Event{
		Kind: KindPaused, ID: "paused/" + id, Vault: vault, Note: note, Time: at.UTC(),
		Title:   clean("knotd paused "+noteName(vault, note), maxTitle),
		Message: clean(why+". "+resume, maxMessage),
	}
}

// coalesced is the one event that stands for the counts held back.
func coalesced(vault string, counts map[Kind]int, at time.Time) Event {
	n := 0
	var parts []string
	for _, k := range []struct {
		kind Kind
		one  string
		many string
	}{{KindQuestion, "question waits", "questions wait"}, {KindFailed, "run failed", "runs failed"}, {KindPaused, "note paused", "notes paused"}} {
		if c := counts[k.kind]; c > 0 {
			n += c
			w := k.one
			if c > 1 {
				w = k.many
			}
			parts = append(parts, strconv.Itoa(c)+" "+w)
		}
	}
	return Event{
		Kind: KindCoalesced, ID: "coalesced/" + at.UTC().Format(time.RFC3339Nano), Vault: vault, Time: at.UTC(), Counts: counts,
		Title:   "knotd: " + strconv.Itoa(n) + " more",
		Message: strings.Join(parts, ", ") + " (held back so as not to flood you; knotd status lists them)",
	}
}

// noteName names a note for a title: its file name, and the vault's
// folder name.
func noteName(vault, note string) string {
	if note == "" {
		return path.Base(vault)
	}
	return path.Base(note) + " (" + path.Base(strings.ReplaceAll(vault, "\\", "/")) + ")"
}

// clean makes s fit for a lock screen and for every sink: control
// characters (a newline, an escape sequence from an agent's error) and
// other white space become one space, format characters (a right-to-left
// override) go, invalid UTF-8 is replaced, and it is cut at max runes with
// an ellipsis.
func clean(s string, max int) string {
	if len(s) > 8*max {
		s = s[:8*max] // enough for max runes and the spaces folded
	}
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if unicode.Is(unicode.Cf, r) {
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if utf8.RuneCountInString(out) <= max {
		return out
	}
	return string([]rune(out)[:max-1]) + "…"
}
