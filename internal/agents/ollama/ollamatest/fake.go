package ollamatest

import (
	"fmt"

	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
)

// Fake imitates `ollama run --hidethinking MODEL` with the prompt on
// standard input.
func Fake(inv *fakekit.Invocation) int {
	f, err := fakekit.ParseFlags(inv.Args, nil, []string{"--hidethinking"})
	if err != nil || len(f.Rest) != 2 || f.Rest[0] != "run" {
		fmt.Fprintf(inv.Stderr, "Error: accepts 1 arg(s), received %d (%v)\n", max(0, len(f.Rest)-1), err)
		return 1
	}
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	if fakekit.FailMode() == "error" {
		fmt.Fprintf(inv.Stderr, "Error: pull model manifest: file does not exist\n")
		return 1
	}
	fmt.Fprintln(inv.Stdout, fakekit.Reply(1))
	return fakekit.Gated(inv)
}
