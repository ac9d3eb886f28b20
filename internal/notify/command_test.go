package notify

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeCommand is the test binary as a notify command doing mode.
func fakeCommand(t *testing.T, mode string, args ...string) (Command, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "events.jsonl")
	t.Setenv(envFake, mode)
	t.Setenv(envOut, out)
	exe, err := os.Executable()
	require.NoError(t, err)
	return Command{Argv: append([]string{exe}, args...)}, out
}

// readEvents reads the events the fake command recorded.
func readEvents(t *testing.T, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var got []Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), "line %q", sc.Text())
		got = append(got, e)
	}
	require.NoError(t, sc.Err())
	return got
}

// TestCommand_EachEventOnceAsJSON runs a real program for each event: the
// event as JSON on its stdin, its argv as configured (no shell: the
// argument with a space and a $ arrives as it is), each ID once.
func TestCommand_EachEventOnceAsJSON(t *testing.T) {
	cmd, out := fakeCommand(t, "record", "--topic", "my notes $HOME")
	var log logBuf
	n := start(t, Options{Vault: "/home/ada/notes", Sinks: []Sink{cmd}, Log: log.logger()})
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	evs := events(at)
	for _, e := range evs {
		n.Notify(e)
		n.Notify(e) // the same event again: once only
	}
	flush(t, n)
	n.Notify(evs[0]) // and after it was sent
	flush(t, n)

	got := readEvents(t, out)
	require.Len(t, got, len(evs), "log: %s", log.String())
	for i, e := range evs {
		require.Equal(t, e, got[i])
	}
	require.Equal(t, "question", string(got[0].Kind))
	require.Equal(t, &QuestionInfo{ID: "3f9a2c1b", Summary: "edit ideas/plan.md"}, got[0].Question)
	require.Empty(t, log.String())
}

// TestCommand_FailureLoggedNotFatal: a command that fails, or hangs past
// the timeout (then it is killed), is logged with what it said, and the
// next event still goes out.
func TestCommand_FailureLoggedNotFatal(t *testing.T) {
	tests := []struct {
		mode string
		want []string
	}{
		{"fail", []string{"cannot notify", "sink=command", "exit status 3", "no route to the pager"}},
		{"hang", []string{"cannot notify", "sink=command", "context deadline exceeded", "after 300ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			cmd, _ := fakeCommand(t, tt.mode)
			var log logBuf
			rec := &recorder{}
			n := start(t, Options{Sinks: []Sink{cmd, rec}, Log: log.logger(), Timeout: 300 * time.Millisecond})
			evs := events(time.Now())
			begin := time.Now()
			for _, e := range evs {
				n.Notify(e) // never blocks, whatever the command does
			}
			require.Less(t, time.Since(begin), 100*time.Millisecond)
			flush(t, n)
			require.Len(t, rec.got(), len(evs))
			require.True(t, contains(log.String(), tt.want...), "log: %s", log.String())
			require.Equal(t, len(evs), strings.Count(log.String(), "cannot notify"))
		})
	}
}
