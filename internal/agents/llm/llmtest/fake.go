package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
)

type llmEntry struct {
	ID             string `json:"id"`
	ConversationID string `json:"conversation_id"`
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	System         string `json:"system"`
	Response       string `json:"response"`
	InputTokens    int    `json:"input_tokens"`
	OutputTokens   int    `json:"output_tokens"`
}

// Fake imitates `llm prompt -d DB ...` and `llm logs list -n 1 --json -d DB`.
// Its "database" is a JSON lines file at the -d path.
func Fake(inv *fakekit.Invocation) int {
	if len(inv.Args) == 0 {
		fmt.Fprintln(inv.Stderr, "Usage: llm [OPTIONS] COMMAND [ARGS]...")
		return 2
	}
	switch inv.Args[0] {
	case "prompt":
		return llmPrompt(inv)
	case "logs":
		return llmLogs(inv)
	}
	fmt.Fprintf(inv.Stderr, "Error: No such command '%s'.\n", inv.Args[0])
	return 2
}

func llmPrompt(inv *fakekit.Invocation) int {
	f, err := fakekit.ParseFlags(inv.Args[1:], []string{"-d", "--database", "-m", "--model", "-s", "--system", "--cid", "--conversation"}, []string{"--log"})
	if err != nil || len(f.Rest) > 0 || f.Values["-d"] == "" {
		fmt.Fprintf(inv.Stderr, "Error: %v (args %q)\n", err, inv.Args)
		return 2
	}
	prompt, err := inv.Record()
	if err != nil {
		return inv.Die(err)
	}
	db := f.Values["-d"]
	entries, err := readLLM(db)
	if err != nil {
		return inv.Die(err)
	}
	conv, turns := fakekit.NewID(), 1
	if cid := f.Values["--cid"]; cid != "" {
		turns = 0
		for _, e := range entries {
			if e.ConversationID == cid {
				turns++
			}
		}
		if turns == 0 {
			fmt.Fprintf(inv.Stderr, "Error: No conversation found with id=%s\n", cid)
			return 1
		}
		conv, turns = cid, turns+1
	}
	if fakekit.FailMode() == "error" {
		fmt.Fprintln(inv.Stderr, "Error: No key found - add one using 'llm keys set openai' or set the OPENAI_API_KEY environment variable")
		return 1
	}
	sys := f.Values["--system"]
	if sys == "" {
		sys = f.Values["-s"]
	}
	e := llmEntry{ID: fakekit.NewID(), ConversationID: conv, Model: f.Values["-m"], Prompt: prompt, System: sys,
		Response: fakekit.Reply(turns), InputTokens: 50 * turns, OutputTokens: 9}
	line, err := json.Marshal(e)
	if err != nil {
		return inv.Die(err)
	}
	if err := fakekit.AppendLine(db, line); err != nil {
		return inv.Die(err)
	}
	fmt.Fprintln(inv.Stdout, e.Response)
	return fakekit.Gated(inv)
}

func llmLogs(inv *fakekit.Invocation) int {
	f, err := fakekit.ParseFlags(inv.Args[1:], []string{"-n", "--count", "-d", "--database"}, []string{"--json"})
	if err != nil || len(f.Rest) != 1 || f.Rest[0] != "list" || !f.Bools["--json"] || f.Values["-n"] != "1" {
		fmt.Fprintf(inv.Stderr, "Error: %v (args %q)\n", err, inv.Args)
		return 2
	}
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	entries, err := readLLM(f.Values["-d"])
	if err != nil {
		return inv.Die(err)
	}
	if len(entries) > 1 {
		entries = entries[len(entries)-1:]
	}
	if entries == nil {
		entries = []llmEntry{}
	}
	b, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return inv.Die(err)
	}
	fmt.Fprintln(inv.Stdout, string(b))
	return 0
}

func readLLM(db string) ([]llmEntry, error) {
	b, err := os.ReadFile(db)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var entries []llmEntry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e llmEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", db, err)
		}
		entries = append(entries, e)
	}
	return entries, nil
}
