package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Type is an event's type, the envelope's "type" field.
type Type string

// The closed vocabulary of event types a Recorder writes. Readers meet other
// types in files written by newer versions and keep them as raw JSON.
const (
	// RunStarted opens every transcript: what ran, on what, and why.
	RunStarted Type = "run.started"
	// MessageUser is the full prompt as the agent received it.
	MessageUser Type = "message.user"
	// MessageAssistant is what the agent produced, as content blocks.
	MessageAssistant Type = "message.assistant"
	// RunFinished is how the agent's run ended.
	RunFinished Type = "run.finished"
	// TieOffAppended says where the run's section went in the tie-off.
	TieOffAppended Type = "tieoff.appended"
)

// Types lists every type a Recorder writes, in the order a run writes them.
var Types = [...]Type{RunStarted, MessageUser, MessageAssistant, RunFinished, TieOffAppended}

// Known reports whether t is one of Types.
func (t Type) Known() bool {
	for _, k := range Types {
		if t == k {
			return true
		}
	}
	return false
}

// Event is one line of a transcript: the envelope and its payload, kept as
// raw JSON. Decode the payload with Payload.
type Event struct {
	// Seq numbers the lines of a run from 1, without gaps.
	Seq int64 `json:"seq"`
	// RunID is the run's UUID.
	RunID string `json:"run_id"`
	// Type says what Data holds.
	Type Type `json:"type"`
	// Time is when the line was written.
	Time time.Time `json:"time"`
	// Data is the payload, a JSON object; for an unknown Type it is kept
	// as read.
	Data json.RawMessage `json:"data,omitempty"`
}

// Payload is the payload of a known event type: Started, UserMessage,
// AssistantMessage, Finished or TieOff. The set is closed.
type Payload interface {
	// Type is the event type this payload belongs to.
	Type() Type
	payload()
}

// ErrUnknownType is returned by Event.Payload for a type this version does
// not know.
var ErrUnknownType = errors.New("transcript: unknown event type")

// Payload decodes the event's payload into its Go type. It returns an error
// wrapping ErrUnknownType for a type outside Types (the raw payload stays in
// Data) and a decoding error for a payload that does not fit its type.
func (e Event) Payload() (Payload, error) {
	switch e.Type {
	case RunStarted:
		return decode[Started](e)
	case MessageUser:
		return decode[UserMessage](e)
	case MessageAssistant:
		return decode[AssistantMessage](e)
	case RunFinished:
		return decode[Finished](e)
	case TieOffAppended:
		return decode[TieOff](e)
	}
	return nil, fmt.Errorf("%w %q (seq %d)", ErrUnknownType, e.Type, e.Seq)
}

// decode unmarshals the event's payload as a T.
func decode[T Payload](e Event) (Payload, error) {
	var v T
	if err := json.Unmarshal(e.Data, &v); err != nil {
		return nil, fmt.Errorf("transcript: decode %s payload (seq %d): %w", e.Type, e.Seq, err)
	}
	return v, nil
}

// appendLine appends the event's line, newline included, to buf. HTML
// characters are not escaped, so "<!--" in a reply stays greppable.
func (e Event) appendLine(buf *bytes.Buffer) error {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	return enc.Encode(e)
}

// MarshalLine returns the event as one transcript line, newline included:
// the bytes a Recorder writes for it. An event read from a file (known type
// or not) gives back the line it was read from, if that line was written by
// a Recorder.
func (e Event) MarshalLine() ([]byte, error) {
	var buf bytes.Buffer
	if err := e.appendLine(&buf); err != nil {
		return nil, fmt.Errorf("transcript: encode event %d: %w", e.Seq, err)
	}
	return buf.Bytes(), nil
}

// marshalNoEscape encodes v as compact JSON without HTML escaping.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
