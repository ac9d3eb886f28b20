package vault

import (
	"fmt"
	"strings"
	"testing"
)

// TestOnce_SessionLineOfCommandWithSession: a command agent handed the
// strand's session ({session}) keeps a conversation, so its Event Context
// says "(new)" at its first turn and "(resumed)" from the second on, as
// for claude; a new conversation (knot_session: new) is new again.
func TestOnce_SessionLineOfCommandWithSession(t *testing.T) {
	e := newEnv(t)
	e.useConversing()
	e.onceFresh()
	for i, want := range []string{"(new)", "(resumed)", "(resumed)"} {
		e.write("note.md", fmt.Sprintf("# Note\n\nturn %d\n", i+1))
		if sum := e.onceFresh(); sum.OK != 1 {
			t.Fatalf("turn %d: summary %+v; want one ok run", i+1, sum)
		}
		calls := e.calls()
		got := sessionLine(calls[len(calls)-1].Stdin)
		if !strings.HasSuffix(got, want) {
			t.Errorf("turn %d: %q; want it to end %q", i+1, got, want)
		}
	}
	e.write("note.md", "---\nknot_session: new\n---\n# Note\n\nafresh\n")
	if sum := e.onceFresh(); sum.OK != 1 {
		t.Fatalf("new conversation: summary %+v; want one ok run", sum)
	}
	calls := e.calls()
	if got := sessionLine(calls[len(calls)-1].Stdin); !strings.HasSuffix(got, "(new)") {
		t.Errorf("after knot_session: new: %q; want (new)", got)
	}
}

// sessionLine returns the Session line of a prompt.
func sessionLine(prompt string) string {
	for l := range strings.SplitSeq(prompt, "\n") {
		if strings.HasPrefix(l, "Session: ") {
			return l
		}
	}
	return ""
}
