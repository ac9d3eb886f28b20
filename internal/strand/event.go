package strand

import (
	"fmt"
	"strings"
	"time"
)

// EventType is what happened to a strand: exactly one of Created, Modified,
// Deleted or Scheduled (a schedule the note carries came due). The zero
// value is not a valid event type.
type EventType uint8

// The closed set of event types. Their String forms are the labels written
// into tie-offs and Event Context blocks and must never change.
const (
	Created EventType = iota + 1
	Modified
	Deleted
	Scheduled
)

// EventTypes lists every valid event type in order.
var EventTypes = [...]EventType{Created, Modified, Deleted, Scheduled}

var labels = [...]string{Created: "Created", Modified: "Modified", Deleted: "Deleted", Scheduled: "Scheduled"}

// String returns the event's label: "Created", "Modified", "Deleted" or
// "Scheduled".
// An invalid value prints as EventType(N).
func (e EventType) String() string {
	if e.Valid() {
		return labels[e]
	}
	return fmt.Sprintf("EventType(%d)", uint8(e))
}

// Valid reports whether e is one of the four event types.
func (e EventType) Valid() bool { return e >= Created && e <= Scheduled }

// ParseEventType parses an event label. It accepts the exact labels and,
// because frontmatter (knot_events) writes them in lower case, any case.
func ParseEventType(s string) (EventType, error) {
	for _, e := range EventTypes {
		if strings.EqualFold(s, labels[e]) {
			return e, nil
		}
	}
	return 0, fmt.Errorf("strand: unknown event %q (want created, modified, deleted or scheduled)", s)
}

// MarshalText implements encoding.TextMarshaler with the event's label.
func (e EventType) MarshalText() ([]byte, error) {
	if !e.Valid() {
		return nil, fmt.Errorf("strand: invalid event type %d", uint8(e))
	}
	return []byte(labels[e]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; see ParseEventType.
func (e *EventType) UnmarshalText(b []byte) error {
	v, err := ParseEventType(string(b))
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// Strand is one note in a vault.
type Strand struct {
	// Path is the vault-relative, slash-separated path ("ideas/plan.md").
	Path string
	// Abs is the absolute path on this machine.
	Abs string
	// Content is the note's bytes as last read (nil for a deleted strand
	// whose content is unknown).
	Content []byte
}

// Event is one settled event on one strand.
type Event struct {
	Type   EventType
	Strand Strand
	// Time is when knotd decided the event happened (the settle time).
	Time time.Time
}

// String describes the event for logs: "Modified ideas/plan.md".
func (ev Event) String() string { return ev.Type.String() + " " + ev.Strand.Path }
