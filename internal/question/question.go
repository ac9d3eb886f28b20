// Package question is a call an agent wants to make that the user's
// permission level (permissions: ask) holds for the user's answer: what the
// call does, its id, the hash that binds an answer to exactly that call,
// and the answers themselves.
//
// Waiting is state, not a process: a question is a section of the note's
// tie-off (and a record in knotd's state, rebuilt from the tie-off), and an
// answer approves or denies the one call whose id and hash it names.
package question

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Kind is what a held call does, as the user is asked about it.
type Kind string

// The kinds of call. Reads are never held.
const (
	// KindEdit creates, changes or deletes a file.
	KindEdit Kind = "edit"
	// KindCommand runs a command.
	KindCommand Kind = "command"
	// KindFetch reaches the network (a URL, a web search).
	KindFetch Kind = "fetch"
	// KindOther is any other tool call.
	KindOther Kind = "other"
)

// Call is one tool call an agent asked to make, as knotd holds it for the
// user: enough to judge it on a small screen, and the exact input that an
// answer is bound to.
type Call struct {
	// Tool is the agent's name for the tool (Claude Code's Write, Bash;
	// an ACP tool call's title or kind).
	Tool string `json:"tool"`
	// Kind is what the call does.
	Kind Kind `json:"kind"`
	// Input is the call's input as the agent gave it (a JSON value):
	// what Hash binds an answer to.
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID is the agent's own id of the call (a tool_use id, an ACP
	// toolCallId), "" when it has none. Not part of the hash: an agent
	// that asks again after a restart gives the same call a new id.
	ToolUseID string `json:"tool_use_id,omitempty"`
	// Path is the vault-relative, slash-separated file an edit writes,
	// "" when the call names none; absolute, as the agent gave it, when
	// Outside.
	Path string `json:"path,omitempty"`
	// Outside reports that the file an edit writes is not inside the
	// vault (or that knotd could not tell): Path is then as the agent gave
	// it.
	Outside bool `json:"outside,omitempty"`
	// Diff is a bounded unified diff of an edit, "" when unknown.
	Diff string `json:"diff,omitempty"`
	// Command is the command line a command would run.
	Command string `json:"command,omitempty"`
	// URL is the address a fetch would reach.
	URL string `json:"url,omitempty"`
	// Why is what the agent said about it before asking, bounded; "" when
	// it said nothing.
	Why string `json:"why,omitempty"`
}

// Hash is the hash an answer is bound to: SHA-256, as 64 lower-case hex
// digits, of the tool's name and its input in canonical JSON (object keys
// sorted, no insignificant space), so that the same call asked again hashes
// the same and any other call does not.
func (c Call) Hash() string {
	h := sha256.New()
	h.Write([]byte(c.Tool))
	h.Write([]byte{0})
	h.Write(Canonical(c.Input))
	return hex.EncodeToString(h.Sum(nil))
}

// Canonical returns a JSON value in canonical form: decoded and encoded
// again, so that object keys are sorted and insignificant space is gone.
// A value that is not valid JSON is returned as it is.
func Canonical(v json.RawMessage) []byte {
	if len(v) == 0 {
		return nil
	}
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return v
	}
	b, err := json.Marshal(x)
	if err != nil {
		return v
	}
	return b
}

// IDLen is the length of a question's id.
const IDLen = 8

// NewID returns the id of the question a run asked about a call: IDLen
// lower-case hex digits of the hash of the run id and the call's hash,
// short enough to type on a phone. Two questions of one run about one call
// have the same id (the same question asked twice).
func NewID(runID, callHash string) string {
	h := sha256.Sum256([]byte(runID + "\x00" + callHash))
	return hex.EncodeToString(h[:])[:IDLen]
}

// ValidID reports whether id has the form NewID returns.
func ValidID(id string) bool {
	if len(id) != IDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Verdict is the user's answer to a question.
type Verdict string

// The verdicts.
const (
	// Approve lets the call run.
	Approve Verdict = "approve"
	// Deny refuses the call; the agent is told, with the user's reason.
	Deny Verdict = "deny"
	// Withdraw ends the question without an answer to the agent: the
	// user's withdrawal, or knotd's when the note changed before anyone
	// answered (the agent then gets the change instead).
	Withdraw Verdict = "withdraw"
)

// Source is where an answer came from.
type Source string

// The sources of an answer.
const (
	// FromNote is a knot_answer key in the note's frontmatter: anyone who
	// can write the vault can give it.
	FromNote Source = "note"
	// FromCommand is knotd approve|deny on the machine that runs knotd.
	FromCommand Source = "command"
	// FromConsole is a button of knotd's local console.
	FromConsole Source = "console"
	// FromKnotd is knotd itself: a question withdrawn because the note
	// changed before anyone answered.
	FromKnotd Source = "knotd"
)

// Answer is the user's answer to one question.
type Answer struct {
	// ID is the question's id.
	ID string `json:"id"`
	// CallHash is the hash of the call the question holds (Call.Hash):
	// the answer applies to that call and no other.
	CallHash string  `json:"call_hash"`
	Verdict  Verdict `json:"verdict"`
	// Why is the user's reason, bounded; "" when none was given.
	Why  string    `json:"why,omitempty"`
	From Source    `json:"from"`
	At   time.Time `json:"at"`
}

// Applies reports whether the answer applies to call: its hash is the one
// the answer is bound to.
func (a Answer) Applies(c Call) bool { return a.CallHash != "" && a.CallHash == c.Hash() }

// String is the answer as a log line says it.
func (a Answer) String() string {
	s := fmt.Sprintf("%s %s (from the %s)", a.Verdict, a.ID, a.From)
	if a.Why != "" {
		s += ": " + a.Why
	}
	return s
}
