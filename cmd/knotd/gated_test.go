package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/agentrun/fakeagent"
)

// gated is a fake agent for the control tests: it waits until the file
// "go-<strand's base name>" exists in its state directory, then fails if
// the note says FAIL and answers otherwise.
const gated = "gated"

func gatedBehaviour(inv *fakeagent.Invocation) int {
	rel := os.Getenv(agentrun.EnvStrand)
	prompt, err := io.ReadAll(inv.Stdin)
	if err != nil {
		fmt.Fprintln(inv.Stderr, "gated:", err)
		return 1
	}
	for {
		if _, err := os.Stat(filepath.Join(inv.State, "go-"+filepath.Base(rel))); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // a fake agent polls its gate: it has no other way to hear
	}
	if strings.Contains(string(prompt), "FAIL") {
		fmt.Fprintln(inv.Stderr, "gated: the note asked me to fail")
		return 3
	}
	fmt.Fprintln(inv.Stdout, "answered "+rel)
	return 0
}
