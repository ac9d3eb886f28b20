package question

import (
	"fmt"
	"strconv"
	"strings"
)

// The bounds of the answers a note gives in its knot_answer key.
const (
	// MaxWhy is the longest reason an answer may give, in bytes.
	MaxWhy = 500
	// MaxAnswers is the most answers one knot_answer key may hold.
	MaxAnswers = 50
)

// NoteAnswer is one answer written in a note's knot_answer key: "approve
// ID [reason]", "deny ID [reason]" or "withdraw ID [reason]".
type NoteAnswer struct {
	ID      string
	Verdict Verdict
	Why     string
}

// answerExample is how a line of knot_answer is written, for messages.
const answerExample = `"approve 3f9a2c1b", "deny 3f9a2c1b too risky" or "withdraw 3f9a2c1b"`

// ParseNoteAnswers reads the value of a note's knot_answer key as YAML
// decodes it: nil (no answers), a string, or a list of strings, each
// "approve ID [reason]", "deny ID [reason]" or "withdraw ID [reason]". The
// verb is read in any case, the id in any case (it is returned in lower
// case, without a ':' or ',' typed after it); spaces anywhere count as one;
// the reason is the rest of the line, at most MaxWhy bytes. A text of
// several lines holds one answer a line; blank lines and empty list items
// are skipped. An id answered twice the same way counts once.
//
// Nothing is guessed: a line that is not an answer, a reason too long, a
// value of another type, an id answered two different ways (neither
// answer is returned), answers beyond MaxAnswers: each is an error that
// says what is wrong and how to write it, and the other answers are
// returned all the same.
func ParseNoteAnswers(v any) ([]NoteAnswer, []error) {
	var items []any
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		items = []any{v}
	case []string:
		for _, s := range v {
			items = append(items, s)
		}
	case []any:
		items = v
	default:
		return nil, []error{fmt.Errorf("knot_answer: the value is %s, not an answer; write for example knot_answer: approve 3f9a2c1b", describe(v))}
	}
	var out []NoteAnswer
	var errs []error
	at := make(map[string]int) // id -> index in out; -1 once answered two ways
	list := len(items) > 1
	n := 0 // answers (and items that are not text) read
	for i, it := range items {
		where := "knot_answer"
		if list {
			where = fmt.Sprintf("knot_answer, item %d", i+1)
		}
		s, ok := it.(string)
		if !ok {
			if it == nil {
				continue // an empty item of a list
			}
			if n++; n > MaxAnswers {
				errs = append(errs, fmt.Errorf("%s: more than %d answers; the rest are not read: remove the answers already applied", where, MaxAnswers))
				return dropped(out), errs
			}
			errs = append(errs, fmt.Errorf("%s: %s is not an answer; write one of %s", where, describe(it), answerExample))
			continue
		}
		// A text of several lines (a YAML block scalar) is one answer a
		// line.
		for line := range strings.Lines(s) {
			if strings.TrimSpace(line) == "" {
				continue
			}
			if n++; n > MaxAnswers {
				errs = append(errs, fmt.Errorf("%s: more than %d answers; the rest are not read: remove the answers already applied", where, MaxAnswers))
				return dropped(out), errs
			}
			a, err := parseNoteAnswer(line)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			out, errs = add(out, errs, at, a, where)
		}
	}
	return dropped(out), errs
}

// add adds a to out, unless its id is answered already (the same way: it
// counts once; another way: neither counts, and that is an error).
func add(out []NoteAnswer, errs []error, at map[string]int, a NoteAnswer, where string) ([]NoteAnswer, []error) {
	j, seen := at[a.ID]
	switch {
	case !seen:
		at[a.ID] = len(out)
		out = append(out, a)
	case j < 0:
	case out[j].Verdict != a.Verdict:
		errs = append(errs, fmt.Errorf("%s: question %s is answered both %s and %s; neither is applied: keep one", where, a.ID, out[j].Verdict, a.Verdict))
		out[j].ID = "" // dropped at the end
		at[a.ID] = -1
	}
	return out, errs
}

// dropped returns out without the answers add dropped.
func dropped(out []NoteAnswer) []NoteAnswer {
	kept := out[:0]
	for _, a := range out {
		if a.ID != "" {
			kept = append(kept, a)
		}
	}
	return kept
}

// parseNoteAnswer reads one line of knot_answer, not blank.
func parseNoteAnswer(s string) (NoteAnswer, error) {
	f := strings.Fields(s)
	shown := strconv.Quote(cut(strings.Join(f, " "), 80))
	var v Verdict
	switch strings.ToLower(f[0]) {
	case string(Approve):
		v = Approve
	case string(Deny):
		v = Deny
	case string(Withdraw):
		v = Withdraw
	default:
		return NoteAnswer{}, fmt.Errorf("%s: %q is not approve, deny or withdraw; write one of %s", shown, cut(f[0], 40), answerExample)
	}
	if len(f) < 2 {
		return NoteAnswer{}, fmt.Errorf("%s: no question id after %s; write the id the question in the tie-off gives, as in %s", shown, v, answerExample)
	}
	id := strings.ToLower(strings.TrimRight(f[1], ":,."))
	if !ValidID(id) {
		return NoteAnswer{}, fmt.Errorf("%s: %q is not a question id (%d hex digits, such as 3f9a2c1b); copy it from the question in the tie-off", shown, cut(f[1], 40), IDLen)
	}
	why := strings.Join(f[2:], " ")
	if len(why) > MaxWhy {
		return NoteAnswer{}, fmt.Errorf("%s: the reason is %d bytes; at most %d are allowed: shorten it", shown, len(why), MaxWhy)
	}
	return NoteAnswer{ID: id, Verdict: v, Why: why}, nil
}

// describe names a decoded YAML value's type for a message.
func describe(v any) string {
	switch v := v.(type) {
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case int, int64, uint64, float64:
		return fmt.Sprintf("the number %v (put it in quotes if you mean text)", v)
	case map[string]any, map[any]any:
		return "a mapping (key: value)"
	case []any:
		return "a nested list"
	}
	return fmt.Sprintf("a value of type %T", v)
}
