package claude_test

import (
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
	"github.com/knotd/knotd/internal/agents/claude/hook"
)

// TestMain lets the test binary impersonate agent CLIs (fakeagent);
// started as `<test binary> hook ARGS…`, knotd's own hook (as
// `knotd hook ARGS…`, the hook an agent at permissions ask runs when
// Request.Hook is empty); and, as `<test binary> testhook FILE`, a
// PreToolUse hook that answers what FILE holds and appends its input to
// FILE.in.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "testhook" {
		os.Exit(testHook(os.Args[2]))
	}
	if len(os.Args) > 1 && os.Args[1] == "hook" {
		if err := hook.Main(os.Args[2:], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "knotd hook:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	fakeagent.Main(nil)
	os.Exit(m.Run())
}

func testHook(file string) int {
	in, err := io.ReadAll(os.Stdin)
	if err == nil {
		err = fakekit.AppendLine(file+".in", in)
	}
	var answer []byte
	if err == nil {
		answer, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testhook:", err)
		return 1
	}
	os.Stdout.Write(answer)
	return 0
}
