package notify

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// appleLiteral reads the AppleScript string literal at the start of s, as
// AppleScript does (a backslash escapes the next character: \" \\ and
// \n \r \t), and returns its value and what follows it.
func appleLiteral(t *testing.T, s string) (string, string) {
	t.Helper()
	require.True(t, strings.HasPrefix(s, `"`), "no literal at %q", s)
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:]
		case '\\':
			i++
			require.Less(t, i, len(s), "a backslash ends %q", s)
			switch s[i] {
			case '"', '\\':
				b.WriteByte(s[i])
			default:
				t.Fatalf("escape \\%c in %q: AppleScript would read it otherwise", s[i], s)
			}
		case '\n', '\r':
			t.Fatalf("a line break in the literal of %q", s)
		default:
			b.WriteByte(c)
		}
	}
	t.Fatalf("unterminated literal %q", s)
	return "", ""
}

// TestOsascript_Argv checks the command macOS's desktop sink runs (macOS
// is not here to run it): osascript, -e, and one statement whose two
// strings read back, as AppleScript reads them, exactly as the title and
// message, whatever they hold: quotes, backslashes, an attempt to end the
// string and run a shell command, line breaks, non-ASCII.
func TestOsascript_Argv(t *testing.T) {
	tests := []struct{ title, message string }{
		{"knotd asks: edit plan.md", "plan.md (notes): edit plan.md"},
		{`say "hi"`, `C:\Users\ada\notes\ "quoted" \"`},
		{`" & (do shell script "touch /tmp/pwned") & "`, `\" & do shell script "id" -- `},
		{"line\nbreak", "tab\there\r\nand a bell \a"},
		{"Überlegungen 🧵", "— ✓"},
	}
	for _, tt := range tests {
		t.Run(tt.title, func(t *testing.T) {
			e := Event{Title: tt.title, Message: tt.message}
			argv := osascriptArgv("", e)
			require.Len(t, argv, 3)
			require.Equal(t, []string{"/usr/bin/osascript", "-e"}, argv[:2])
			rest, ok := strings.CutPrefix(argv[2], "display notification ")
			require.True(t, ok, argv[2])
			msg, rest := appleLiteral(t, rest)
			rest, ok = strings.CutPrefix(rest, " with title ")
			require.True(t, ok, argv[2])
			title, rest := appleLiteral(t, rest)
			require.Empty(t, rest, "nothing after the title")
			ctl := strings.NewReplacer("\n", " ", "\r", " ", "\t", " ", "\a", " ")
			require.Equal(t, ctl.Replace(tt.message), msg)
			require.Equal(t, ctl.Replace(tt.title), title)
		})
	}
}

// TestOsascript_RunsProgram runs the sink with a stand-in for osascript
// (the test binary, recording its argv): the argv above, no shell.
func TestOsascript_RunsProgram(t *testing.T) {
	cmd, out := fakeCommand(t, "args")
	e := events(time.Now())[0]
	require.NoError(t, Osascript{Program: cmd.Argv[0]}.Send(context.Background(), e))
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var argv []string
	require.NoError(t, json.Unmarshal(data, &argv))
	require.Equal(t, osascriptArgv(cmd.Argv[0], e)[1:], argv)
}
