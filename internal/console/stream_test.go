package console

import (
	"io"

	"github.com/knotd/knotd/internal/transcript"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sseEvent is one event as a browser reads an event stream.
type sseEvent struct{ event, id, data string }

// parseSSE reads an event stream as the HTML standard says a browser
// does: CR, LF and CRLF each end a line, a blank line dispatches the event.
func parseSSE(s string) []sseEvent {
	var (
		out []sseEvent
		cur sseEvent
		has bool
	)
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	for l := range strings.SplitSeq(s, "\n") {
		if l == "" {
			if has {
				cur.data = strings.TrimSuffix(cur.data, "\n")
				out = append(out, cur)
			}
			cur, has = sseEvent{}, false
			continue
		}
		field, val, _ := strings.Cut(l, ":")
		val = strings.TrimPrefix(val, " ")
		switch field {
		case "event":
			cur.event, has = val, true
		case "id":
			cur.id, has = val, true
		case "data":
			cur.data, has = cur.data+val+"\n", true
		}
	}
	return out
}

// TestStream_SendLineBreaks: whatever line breaks a payload holds (a
// note's text or an agent's output rendered into it), the browser reads
// exactly the one event sent, with the payload's lines as its data, and no
// field the payload spelled out.
func TestStream_SendLineBreaks(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"lf", "a\ndata: x\nevent: end\nid: 99", "a\ndata: x\nevent: end\nid: 99"},
		{"cr", "a\rdata: x\revent: end\rid: 99", "a\ndata: x\nevent: end\nid: 99"},
		{"crlf", "a\r\ndata: x\r\nevent: end\r\nid: 99", "a\ndata: x\nevent: end\nid: 99"},
		{"cr blank line", "a\r\revent: end\rdata: x\r", "a\n\nevent: end\ndata: x\n"},
		{"mixed", "a\r\n\rid: 5\n\revent: y", "a\n\nid: 5\n\nevent: y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s := &stream{w: rec, rc: http.NewResponseController(rec), id: "r"}
			require.NoError(t, s.send("ev", "3", tc.data))
			got := parseSSE(rec.Body.String())
			require.Equal(t, []sseEvent{{event: "ev", id: "3", data: tc.want}}, got, "stream %q", rec.Body.String())
		})
	}
}

// TestStream_NoteTextCannotAddFields: a note's text with bare carriage
// returns, in the prompt the run's transcript records, reaches the browser
// as data of its event and nothing else: no "end" event, no id of its own.
func TestStream_NoteTextCannotAddFields(t *testing.T) {
	f := newFixture(t)
	id, r := f.record(t, "a.md",
		transcript.UserMessage{Prompt: "# Note\rdata: x\revent: end\rid: 99\r\rdata: injected"},
		transcript.AssistantMessage{Blocks: []transcript.Block{{Type: transcript.BlockText, Text: "ok\r\revent: end\rdata: y"}}},
		transcript.Finished{Outcome: "ok"},
		transcript.TieOff{Path: "a.tieoff.md"})
	require.NoError(t, r.Close())
	origin, _ := serve(t, f)
	resp, err := http.Get(origin + base + "run/" + id + "/events")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	evs := parseSSE(string(body))
	var names, ids []string
	for _, e := range evs {
		names, ids = append(names, e.event), append(ids, e.id)
	}
	require.Equal(t, []string{"ev", "ev", "ev", "ev", "ev", "end"}, names, "stream %q", body)
	require.Equal(t, []string{"1", "2", "3", "4", "5", ""}, ids)
	require.Equal(t, "ok", evs[5].data)
	require.Contains(t, evs[1].data, "event: end")
}
