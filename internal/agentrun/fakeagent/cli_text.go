package fakeagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
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

// llm imitates `llm prompt -d DB ...` and `llm logs list -n 1 --json -d DB`.
// Its "database" is a JSON lines file at the -d path.
func llm(inv *Invocation) int {
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

func llmPrompt(inv *Invocation) int {
	f, err := parseFlags(inv.Args[1:], []string{"-d", "--database", "-m", "--model", "-s", "--system", "--cid", "--conversation"}, []string{"--log"})
	if err != nil || len(f.rest) > 0 || f.values["-d"] == "" {
		fmt.Fprintf(inv.Stderr, "Error: %v (args %q)\n", err, inv.Args)
		return 2
	}
	prompt, err := inv.record()
	if err != nil {
		return inv.die(err)
	}
	db := f.values["-d"]
	entries, err := readLLM(db)
	if err != nil {
		return inv.die(err)
	}
	conv, turns := newID(), 1
	if cid := f.values["--cid"]; cid != "" {
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
	if failMode() == "error" {
		fmt.Fprintln(inv.Stderr, "Error: No key found - add one using 'llm keys set openai' or set the OPENAI_API_KEY environment variable")
		return 1
	}
	sys := f.values["--system"]
	if sys == "" {
		sys = f.values["-s"]
	}
	e := llmEntry{ID: newID(), ConversationID: conv, Model: f.values["-m"], Prompt: prompt, System: sys,
		Response: reply(turns), InputTokens: 50 * turns, OutputTokens: 9}
	line, err := json.Marshal(e)
	if err != nil {
		return inv.die(err)
	}
	if err := appendLine(db, line); err != nil {
		return inv.die(err)
	}
	fmt.Fprintln(inv.Stdout, e.Response)
	return gated(inv)
}

func llmLogs(inv *Invocation) int {
	f, err := parseFlags(inv.Args[1:], []string{"-n", "--count", "-d", "--database"}, []string{"--json"})
	if err != nil || len(f.rest) != 1 || f.rest[0] != "list" || !f.bools["--json"] || f.values["-n"] != "1" {
		fmt.Fprintf(inv.Stderr, "Error: %v (args %q)\n", err, inv.Args)
		return 2
	}
	if _, err := inv.record(); err != nil {
		return inv.die(err)
	}
	entries, err := readLLM(f.values["-d"])
	if err != nil {
		return inv.die(err)
	}
	if len(entries) > 1 {
		entries = entries[len(entries)-1:]
	}
	if entries == nil {
		entries = []llmEntry{}
	}
	b, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return inv.die(err)
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

// ollama imitates `ollama run --hidethinking MODEL` with the prompt on
// standard input.
func ollama(inv *Invocation) int {
	f, err := parseFlags(inv.Args, nil, []string{"--hidethinking"})
	if err != nil || len(f.rest) != 2 || f.rest[0] != "run" {
		fmt.Fprintf(inv.Stderr, "Error: accepts 1 arg(s), received %d (%v)\n", max(0, len(f.rest)-1), err)
		return 1
	}
	if _, err := inv.record(); err != nil {
		return inv.die(err)
	}
	if failMode() == "error" {
		fmt.Fprintf(inv.Stderr, "Error: pull model manifest: file does not exist\n")
		return 1
	}
	fmt.Fprintln(inv.Stdout, reply(1))
	return gated(inv)
}
