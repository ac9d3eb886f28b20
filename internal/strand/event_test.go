package strand

import (
	"encoding/json"
	"testing"
)

func TestEventTypeLabels(t *testing.T) {
	want := map[EventType]string{Created: "Created", Modified: "Modified", Deleted: "Deleted", Scheduled: "Scheduled"}
	for e, label := range want {
		if e.String() != label {
			t.Errorf("%d.String() = %q; want %q", e, e.String(), label)
		}
		for _, in := range []string{label, "created", "MODIFIED", "deleted", "scheduled", "SCHEDULED"} {
			got, err := ParseEventType(in)
			if err != nil {
				t.Errorf("ParseEventType(%q): %v", in, err)
			}
			if !got.Valid() {
				t.Errorf("ParseEventType(%q) = %v, not valid", in, got)
			}
		}
	}
	for _, bad := range []string{"", "renamed", "Create"} {
		if _, err := ParseEventType(bad); err == nil {
			t.Errorf("ParseEventType(%q) succeeded; want error", bad)
		}
	}
	if EventType(0).Valid() || EventType(5).Valid() {
		t.Error("out-of-range EventType reported valid")
	}
	if s := EventType(9).String(); s != "EventType(9)" {
		t.Errorf("EventType(9).String() = %q", s)
	}
}

func TestEventTypeJSON(t *testing.T) {
	b, err := json.Marshal(map[string]EventType{"e": Deleted})
	if err != nil || string(b) != `{"e":"Deleted"}` {
		t.Fatalf("Marshal = %s, %v", b, err)
	}
	var m map[string]EventType
	if err := json.Unmarshal(b, &m); err != nil || m["e"] != Deleted {
		t.Fatalf("Unmarshal = %v, %v", m, err)
	}
	if _, err := json.Marshal(EventType(0)); err == nil {
		t.Error("Marshal(EventType(0)) succeeded")
	}
	ev := Event{Type: Modified, Strand: Strand{Path: "a/b.md"}}
	if ev.String() != "Modified a/b.md" {
		t.Errorf("Event.String() = %q", ev.String())
	}
}
