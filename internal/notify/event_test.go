package notify

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// TestClean: what reaches a lock screen is one bounded line of valid text.
func TestClean(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"  two\n\nlines\t", 20, "two lines"},
		{"esc \x1b[31mred\x1b[0m", 20, "esc [31mred [0m"},
		{"rtl \u202egnp.exe", 20, "rtl gnp.exe"},
		{"bad \xff utf8", 20, "bad \uFFFD utf8"},
		{"abcdefghij", 5, "abcd…"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, clean(tt.in, tt.max), "clean(%q)", tt.in)
	}
}

// TestEvents_Bounded: an event's title and message stay within their
// bounds, on one line, whatever the reason or summary holds.
func TestEvents_Bounded(t *testing.T) {
	long := strings.Repeat("error line\n", 500)
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.FixedZone("x", 3600))
	for _, e := range []Event{
		Question("/v", "a.md", "3f9a2c1b", long, false, at),
		Failed("/v", "a.md", "", long, at),
		Paused("/v", "a.md", "x", long, long, at),
	} {
		require.LessOrEqual(t, utf8.RuneCountInString(e.Title), maxTitle, e.Title)
		require.LessOrEqual(t, utf8.RuneCountInString(e.Message), maxMessage, e.Message)
		require.NotContains(t, e.Title+e.Message, "\n")
		require.Equal(t, time.UTC, e.Time.Location())
	}
	// However long the reason, what to do next is said.
	require.Contains(t, Failed("/v", "a.md", "r1", long, at).Message, "knotd retry a.md runs it again")
	// Without a run id, a failure is once per note and reason.
	require.Equal(t, Failed("/v", "a.md", "", "disk full", at).ID, Failed("/v", "a.md", "", "disk full", at.Add(time.Hour)).ID)
	require.NotEqual(t, Failed("/v", "a.md", "", "disk full", at).ID, Failed("/v", "b.md", "", "disk full", at).ID)
	require.Equal(t, "failed/r1", Failed("/v", "a.md", "r1", "x", at).ID)
}
