package agenttest

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// SSEEvent is one parsed server-sent event.
type SSEEvent struct {
	Name string
	Data map[string]any
}

// ParseSSE splits a text/event-stream body into events, failing the test on
// anything but "event:" and "data:" lines grouped by blank lines.
func ParseSSE(t testing.TB, body string) []SSEEvent {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Fatalf("stream does not end with a blank line: %q", body)
	}
	var events []SSEEvent
	for _, frame := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		var ev SSEEvent
		sc := bufio.NewScanner(strings.NewReader(frame))
		for sc.Scan() {
			name, value, ok := strings.Cut(sc.Text(), ": ")
			switch {
			case ok && name == "event" && ev.Name == "":
				ev.Name = value
			case ok && name == "data" && ev.Data == nil:
				if err := json.Unmarshal([]byte(value), &ev.Data); err != nil {
					t.Fatalf("event %q: data %q: %v", ev.Name, value, err)
				}
			default:
				t.Fatalf("unexpected line %q in frame %q", sc.Text(), frame)
			}
		}
		if ev.Name == "" || ev.Data == nil {
			t.Fatalf("frame %q lacks an event or data line", frame)
		}
		events = append(events, ev)
	}
	return events
}
