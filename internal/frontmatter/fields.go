package frontmatter

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// knotd's frontmatter keys. Writes always use these canonical names.
const (
	KeySession = "knot_session"
	// NewSessionValue, as the value of knot_session, asks knotd for a new
	// conversation: it replaces it with a new session UUID at the strand's
	// next run.
	NewSessionValue = "new"
	KeyResume       = "knot_resume"
	KeyMode         = "knot_mode"
	KeyAgent        = "knot_agent"
	KeyModel        = "knot_model"
	KeyEvents       = "knot_events"
	// KeyAnswer holds the user's answers to the note's questions (issue
	// 26): "approve ID [reason]", "deny ID [reason]" or "withdraw ID", one
	// or a list. One of knotd's own keys: changing it alone is no change
	// of the note's content (see WithoutOwnKeys).
	KeyAnswer = "knot_answer"
	// KeySchedule runs the note on a schedule (issue 27: event
	// Scheduled; syntax in package schedule). One of knotd's own keys:
	// setting or changing it alone is no change of the note's content.
	KeySchedule = "knot_schedule"
)

// Mode says what knotd does with a strand's tie-off.
type Mode string

// The modes a strand can ask for with knot_mode.
const (
	ModeAppend  Mode = "append"  // add each run's section to the tie-off (the default)
	ModeReplace Mode = "replace" // keep only the newest section
	ModeOff     Mode = "off"     // leave the strand alone
)

// Fields are knotd's keys in a strand's frontmatter. A string field is ""
// and Events is nil when the key is absent, null, or has a wrong value; a
// wrong value is described in Problems.
type Fields struct {
	// Session is the strand's session UUID (knot_session, or the read-only
	// aliases agent_doc_session and session), exactly as written.
	Session string
	// NewSession is set when knot_session is "new" (NewSessionValue): the
	// user asks for a new conversation; Session is then "".
	NewSession bool
	// Resume is the agent's resume handle (knot_resume, or resume).
	Resume string
	// Mode is the knot_mode value as written (or agent_doc_mode, mode),
	// lower-cased; use ResolveMode to get the effective mode.
	Mode Mode
	// Agent is the name of the agent to run (knot_agent).
	Agent string
	// Model is the model name handed to the agent (knot_model).
	Model string
	// Events lists the events that trigger runs (knot_events), lower-case,
	// in the order written, without repeats. Nil means every event; an
	// empty list means none.
	Events []string
	// Answer is the value of knot_answer as YAML decodes it (a string, a
	// []any of them, or whatever else was written), nil when the key is
	// absent or null; question.ParseNoteAnswers reads and checks it.
	Answer any
	// Schedule is the text of knot_schedule, blanks collapsed ("" when
	// absent or null). The vault checks it (schedule.Parse) and reports a
	// schedule it cannot read without keeping the note from running, so
	// it is not among Problems; ScheduleProblem says why a value that is
	// not text was not read.
	Schedule        string
	ScheduleProblem *FieldError
	// Problems are the knotd keys whose values cannot be used, in source
	// order: wrong types (knot_model: 123), unknown values (knot_events:
	// [bogus]), an invalid session id, and unknown knot_* keys.
	Problems []*FieldError

	modeErr *FieldError // the problem with the mode key, for ResolveMode
	modeKey string      // the key Mode was read from, for messages
	modeLn  int         // its line
}

// FieldError is a knotd key whose value cannot be used.
type FieldError struct {
	Key  string // the key as written, such as knot_model or an alias
	Line int    // 1-based source line of the key; 0 when not from a source
	Msg  string // what is wrong and how to fix it
}

// Error returns "frontmatter: line N: key: message".
func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("frontmatter: line %d: %s: %s", e.Line, e.Key, e.Msg)
	}
	return fmt.Sprintf("frontmatter: %s: %s", e.Key, e.Msg)
}

// ResolveMode returns the strand's effective mode: knot_mode, else a
// read-only alias (agent_doc_mode, then mode), else ModeAppend. A value
// that is not a mode is an error naming the value and the modes allowed,
// never a silent default. ResolveMode is pure.
func ResolveMode(f Fields) (Mode, error) {
	if f.modeErr != nil {
		return "", f.modeErr
	}
	if f.Mode == "" {
		return ModeAppend, nil
	}
	key := f.modeKey
	if key == "" {
		key = KeyMode
	}
	if msg := checkMode(string(f.Mode)); msg != "" {
		return "", &FieldError{Key: key, Line: f.modeLn, Msg: msg + aliasHint(key)}
	}
	return Mode(strings.ToLower(string(f.Mode))), nil
}

// Field numbers, in the canonical order keys are written in.
const (
	fieldSession = iota
	fieldResume
	fieldMode
	fieldAgent
	fieldModel
	fieldEvents
	fieldAnswer
	fieldSchedule
	numFields
)

var canonical = [numFields]string{KeySession, KeyResume, KeyMode, KeyAgent, KeyModel, KeyEvents, KeyAnswer, KeySchedule}

// unknownKeyMsg is the problem of an unknown knot_* key (made once: a block
// can hold many).
var unknownKeyMsg = "unknown knotd key; knotd's keys are " + strings.Join(canonical[:], ", ")

// aliases are agent-doc's names, read (never written), in precedence order.
var aliases = [numFields][]string{
	fieldSession: {"agent_doc_session", "session"},
	fieldResume:  {"resume"},
	fieldMode:    {"agent_doc_mode", "mode"},
}

// fieldOf returns the field a key names and its rank: 0 for the canonical
// key, 1.. for aliases in precedence order; ok is false for other keys.
func fieldOf(key string) (field, rank int, ok bool) {
	for f := range numFields {
		if key == canonical[f] {
			return f, 0, true
		}
		for i, a := range aliases[f] {
			if key == a {
				return f, i + 1, true
			}
		}
	}
	return 0, 0, false
}

// aliasHint explains, for a message about an alias key, what knotd made
// of it and how to override it.
func aliasHint(key string) string {
	if f, rank, ok := fieldOf(key); ok && rank > 0 {
		return fmt.Sprintf(" (knotd reads %s as %s; set %s to override it)", key, canonical[f], canonical[f])
	}
	return ""
}

// readFields fills p.fields from the top-level entries: the canonical key
// wins over aliases, and an alias it shadows is not looked at. A key with a
// null value counts as absent, so it shadows nothing.
func (p *parsed) readFields() error {
	var chosen [numFields]*entry
	var rank [numFields]int
	seen := map[string]int{}
	var unknown []*FieldError
	for i := range p.entries {
		e := &p.entries[i]
		f, r, ok := fieldOf(e.key)
		if !ok {
			if strings.HasPrefix(e.key, "knot_") {
				unknown = append(unknown, &FieldError{Key: e.key, Line: p.fileLine(e.k.Line), Msg: unknownKeyMsg})
			}
			continue
		}
		if first, dup := seen[e.key]; dup {
			return &SyntaxError{Line: p.fileLine(e.k.Line), Msg: fmt.Sprintf("%s is set twice (first at line %d); keep one", e.key, first)}
		}
		seen[e.key] = p.fileLine(e.k.Line)
		if isNull(e.v) {
			continue
		}
		if chosen[f] == nil || r < rank[f] {
			chosen[f], rank[f] = e, r
		}
	}
	fs := &p.fields
	for f, e := range chosen {
		if e == nil {
			continue
		}
		line := p.fileLine(e.k.Line)
		fail := func(msg string) {
			fe := &FieldError{Key: e.key, Line: line, Msg: msg + aliasHint(e.key)}
			fs.Problems = append(fs.Problems, fe)
			if f == fieldMode {
				fs.modeErr = fe
			}
		}
		if f == fieldAnswer {
			// Checked by question.ParseNoteAnswers, which reports each
			// answer's problem.
			var v any
			if err := e.v.Decode(&v); err != nil {
				fail("the value cannot be read: " + err.Error())
			} else {
				fs.Answer = v
			}
			continue
		}
		if f == fieldSchedule {
			// Never a problem that keeps the note from running: the
			// vault says what is wrong with it and serves the note.
			if s, present, msg := stringValue(e.v); msg != "" {
				fs.ScheduleProblem = &FieldError{Key: e.key, Line: line, Msg: msg}
			} else if present {
				fs.Schedule = strings.Join(strings.Fields(s), " ")
			}
			continue
		}
		if f == fieldEvents {
			events, msg := eventsValue(e.v)
			if msg != "" {
				fail(msg)
			} else {
				fs.Events = events
			}
			continue
		}
		s, present, msg := stringValue(e.v)
		if f == fieldSession && msg == "" && present && s == NewSessionValue && e.key == KeySession {
			fs.NewSession = true
			continue
		}
		if msg == "" && present {
			msg = checkField(f, s)
		}
		if msg != "" {
			fail(msg)
			continue
		}
		switch f {
		case fieldSession:
			fs.Session = s
		case fieldResume:
			fs.Resume = s
		case fieldMode:
			fs.Mode = Mode(strings.ToLower(s))
			fs.modeKey, fs.modeLn = e.key, line
		case fieldAgent:
			fs.Agent = s
		case fieldModel:
			fs.Model = s
		}
	}
	fs.Problems = append(fs.Problems, unknown...)
	slices.SortStableFunc(fs.Problems, func(a, b *FieldError) int { return a.Line - b.Line })
	return nil
}

// isNull reports whether a value is YAML null (~, null, or nothing).
func isNull(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// stringValue reads a value that must be one string. A null value is
// absent. Other types are a problem: YAML would read knot_model: 123 as a
// number, so knotd asks for quotes instead of guessing.
func stringValue(n *yaml.Node) (s string, present bool, msg string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!null":
			return "", false, ""
		case "!!str":
			return n.Value, true, ""
		}
	}
	return "", false, "the value " + describe(n) + " is not text" + quoteHint(n)
}

// eventsValue reads knot_events: one event name or a list of them.
func eventsValue(n *yaml.Node) ([]string, string) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	var items []*yaml.Node
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		return nil, ""
	case n.Kind == yaml.ScalarNode:
		items = []*yaml.Node{n}
	case n.Kind == yaml.SequenceNode:
		items = n.Content
	default:
		return nil, "the value " + describe(n) + " is not an event or a list of events; write for example [created, modified]"
	}
	names := make([]string, 0, len(items))
	for _, it := range items {
		s, present, msg := stringValue(it)
		if msg != "" || !present {
			return nil, "the list holds " + describe(it) + "; want created, modified, deleted or scheduled"
		}
		names = append(names, s)
	}
	return checkEvents(names)
}
