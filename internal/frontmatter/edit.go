package frontmatter

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// The edits below take a strand's bytes and return the edited bytes. They
// change only the keys they set: every other byte (other keys, comments,
// order, quoting, blank lines, line endings, a BOM, the body) is kept, and
// each result is re-read and checked before it is returned. When the
// strand already says what an edit would write, the edit returns src
// itself. An edit of a strand whose frontmatter does not parse returns the
// *SyntaxError. None of them touches the file system: see WriteFile.

// SetSession sets knot_session to id, a UUID. An alias such as
// agent_doc_session is left as it is; knot_session takes precedence over it.
//
// knotd only writes its key where it can take its keys out again, so that
// a version with the key and one without read as the same (WithoutOwnKeys):
// a frontmatter block that cannot be edited that way (a line the YAML
// reader splits where knotd's line reader does not, such as one with a
// bare carriage return) is an error, and the strand is left as it is.
func SetSession(src []byte, id string) ([]byte, error) {
	c, err := fieldChange(fieldSession, id)
	if err != nil {
		return nil, err
	}
	if _, err := MergeFields(src, ownKeysOut); err != nil {
		return nil, err
	}
	out, err := edit(src, c)
	if err != nil {
		return nil, err
	}
	if _, err := MergeFields(out, ownKeysOut); err != nil {
		return nil, err
	}
	return out, nil
}

// ownKeysOut is the change that takes knotd's own keys out of a strand.
var ownKeysOut = map[string]any{KeySession: nil, KeyResume: nil, KeyAnswer: nil, KeySchedule: nil}

// AskNewSession sets knot_session to "new" (NewSessionValue): the strand
// asks knotd for a new conversation at its next run (knotd reset).
func AskNewSession(src []byte) ([]byte, error) {
	c, err := setTo(KeySession, NewSessionValue)
	if err != nil {
		return nil, err
	}
	return edit(src, c)
}

// MergeFields sets each key of fields to its value, adding the keys that
// are missing (at the end of the block, knotd's keys first in their
// canonical order, then the others by name) and deleting those whose value
// is nil. Keys not in fields are left alone.
//
// knotd's keys take the types their fields have: a string (or Mode) for
// knot_session, knot_resume, knot_mode, knot_agent and knot_model, a
// []string or a single string for knot_events, and are validated like
// Parse validates them. Another knot_* key is an error, and so is a
// read-only alias: writes use canonical names. Other keys take a string,
// []string, bool or int.
func MergeFields(src []byte, fields map[string]any) ([]byte, error) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		fa, ra, oka := fieldOf(a)
		fb, rb, okb := fieldOf(b)
		ka, kb := oka && ra == 0, okb && rb == 0
		switch {
		case ka && kb:
			return fa - fb
		case ka:
			return -1
		case kb:
			return 1
		}
		return cmp.Compare(a, b)
	})
	cs := make([]change, 0, len(keys))
	for _, k := range keys {
		c, err := mergeChange(k, fields[k])
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return edit(src, cs...)
}

func mergeChange(key string, v any) (change, error) {
	f, rank, known := fieldOf(key)
	switch {
	case key == "":
		return change{}, fmt.Errorf("frontmatter: empty key")
	case known && rank > 0:
		return change{}, fmt.Errorf("frontmatter: %s is a read-only alias; write %s instead", key, canonical[f])
	case !known && strings.HasPrefix(key, "knot_"):
		return change{}, fmt.Errorf("frontmatter: unknown knotd key %s; knotd's keys are %s", key, strings.Join(canonical[:], ", "))
	case v == nil:
		return change{key: key, del: true}, nil
	case known && f == fieldEvents:
		switch v := v.(type) {
		case []string:
			return fieldChange(f, v...)
		case string:
			return fieldChange(f, v)
		}
		return change{}, fmt.Errorf("frontmatter: %s: want []string or string, not %T", key, v)
	case known:
		switch v := v.(type) {
		case string:
			return fieldChange(f, v)
		case Mode:
			return fieldChange(f, string(v))
		}
		return change{}, fmt.Errorf("frontmatter: %s: want a string, not %T", key, v)
	}
	text, err := render(v)
	if err != nil {
		return change{}, fmt.Errorf("frontmatter: %s: %w", key, err)
	}
	return setTo(key, text)
}

// fieldChange validates values for knotd field f and returns the change
// that writes them under the canonical key.
func fieldChange(f int, values ...string) (change, error) {
	key := canonical[f]
	if f == fieldEvents {
		events, msg := checkEvents(values)
		if msg != "" {
			return change{}, &FieldError{Key: key, Msg: msg}
		}
		text, err := quoteList(events)
		if err != nil {
			return change{}, &FieldError{Key: key, Msg: err.Error()}
		}
		return setTo(key, text)
	}
	s := values[0]
	if msg := checkField(f, s); msg != "" {
		return change{}, &FieldError{Key: key, Msg: msg}
	}
	if f == fieldMode {
		s = strings.ToLower(s)
	}
	text, err := quote(s)
	if err != nil {
		return change{}, &FieldError{Key: key, Msg: err.Error()}
	}
	return setTo(key, text)
}

func edit(src []byte, cs ...change) ([]byte, error) {
	p, err := parse(src)
	if err != nil {
		return nil, err
	}
	return p.apply(cs)
}

// WithoutOwnKeys returns src without knotd's own bookkeeping keys,
// knot_session, knot_resume and knot_answer (the user's answers to
// questions, which run nothing), and without the frontmatter block if
// nothing but blank lines is left in it: what the user wrote, which is
// what knotd answers. Two versions of a strand that differ only in those
// keys (knotd added them, a sync tool carried them, git discarded them,
// the user answered a question) have the same WithoutOwnKeys. A strand whose frontmatter cannot be
// edited (see MergeFields) is returned as it is.
func WithoutOwnKeys(src []byte) []byte {
	out, err := MergeFields(src, ownKeysOut)
	if err != nil {
		return src
	}
	l, err := scan(out)
	if err != nil || !l.found {
		return out
	}
	for start := l.content.Start; start < l.content.End; {
		textEnd, next, _ := lineAt(out, start)
		if !isBlank(out[start:textEnd]) {
			return out
		}
		start = next
	}
	return append(out[:l.bom:l.bom], out[l.end:]...)
}
