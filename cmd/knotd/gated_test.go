package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// gated is a fake agent for the control tests: it waits until the file
// "go-<strand's base name>" exists in its state directory, then fails if
// the note (as it is on disk then) says FAIL and answers otherwise.
const gated = "gated"

func gatedBehaviour(inv *fakeagent.Invocation) int {
	rel := os.Getenv(agentrun.EnvStrand)
	if _, err := io.Copy(io.Discard, inv.Stdin); err != nil {
		fmt.Fprintln(inv.Stderr, "gated:", err)
		return 1
	}
	for {
		if _, err := os.Stat(filepath.Join(inv.State, "go-"+filepath.Base(rel))); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // a fake agent polls its gate: it has no other way to hear
	}
	note, err := os.ReadFile(filepath.Join(os.Getenv(agentrun.EnvVault), filepath.FromSlash(rel)))
	if err != nil {
		fmt.Fprintln(inv.Stderr, "gated:", err)
		return 1
	}
	if strings.Contains(string(note), "FAIL") {
		fmt.Fprintln(inv.Stderr, "gated: the note asked me to fail")
		return 3
	}
	fmt.Fprintln(inv.Stdout, "answered "+rel)
	return 0
}

// looper is a fake agent that answers, and appends a line to the note it
// answers: a loop, as an agent that edits its own note makes one.
const looper = "looper"

func looperBehaviour(inv *fakeagent.Invocation) int {
	p := filepath.Join(os.Getenv(agentrun.EnvVault), filepath.FromSlash(os.Getenv(agentrun.EnvStrand)))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		_, err = f.WriteString("\nand one more line\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(inv.Stderr, "looper:", err)
		return 1
	}
	fmt.Fprintln(inv.Stdout, "answered, and edited the note")
	return 0
}
