package livetext

import (
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/transcript"
)

// TestTextLive_Cuts: what a flush hands over ends at a line break, else
// at a space or tab, else (a long run of neither) at liveChunk; blank
// output waits for text; the end hands over the rest; all of the output is
// handed over once, in order.
func TestTextLive_Cuts(t *testing.T) {
	long := strings.Repeat("x", liveChunk+10)
	for _, tc := range []struct {
		name   string
		writes []string
		tick   bool     // flush after the writes, as the timer does
		want   []string // blocks after the writes (and tick)
		all    []string // blocks after close
	}{
		{"lines", []string{"one\ntwo\nthr"}, true, []string{"one\ntwo\n"}, []string{"one\ntwo\n", "thr"}},
		{"words", []string{"sk-secret-value and more"}, true, []string{"sk-secret-value and "}, []string{"sk-secret-value and ", "more"}},
		{"no cut yet", []string{"sk-secret-value"}, true, nil, []string{"sk-secret-value"}},
		{"blank waits", []string{"\n\n  "}, true, nil, nil},
		{"blank joins text", []string{"\n\n", "text\n"}, true, []string{"\n\ntext\n"}, []string{"\n\ntext\n"}},
		{"long run cut at the chunk", []string{long}, false, []string{long[:liveChunk]}, []string{long[:liveChunk], long[liveChunk:]}},
		{"no tick, nothing yet", []string{"a line\n"}, false, nil, []string{"a line\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			s := New(func(m transcript.AssistantMessage) {
				for _, b := range m.Blocks {
					got = append(got, b.Text)
				}
			})
			s.every = 1 << 62 // the test ticks
			for _, w := range tc.writes {
				s.write([]byte(w))
			}
			if tc.tick {
				s.tick()
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("before close: %q; want %q", got, tc.want)
			}
			s.close()
			s.write([]byte("after close\n"))
			if strings.Join(got, "|") != strings.Join(tc.all, "|") || len(got) != len(tc.all) {
				t.Errorf("after close: %q; want %q", got, tc.all)
			}
			if len(s.sent) != len(got) {
				t.Errorf("sent %d blocks; handed over %d", len(s.sent), len(got))
			}
		})
	}
}
