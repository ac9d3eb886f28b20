// Package llm is knotd's agent for Simon Willison's llm CLI: its command
// lines, where it keeps its conversations, and how the conversation id is
// read back.
package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/knotd/knotd/internal/agents/kit"
)

// Driver runs Simon Willison's llm CLI:
//
//	llm prompt -d <db> --log [-m M] [-s I]            (new)
//	llm prompt -d <db> --log [-m M] [-s I] --cid <id> (resume)
//
// with the prompt on standard input and the reply as plain text on standard
// output. llm keeps conversations in a SQLite logs database; knotd gives
// every strand session its own private one, <state>/llm/<session>.db in
// the vault's folder of knotd's state directory (Attempt.StateDir: it is
// the machine's, never the vault's), so the user's own llm history is left
// alone and the newest entry of that database is always this run's (runs of
// one strand never overlap). --log keeps logging on even if the user turned
// it off. After a successful run knotd asks
//
//	llm logs list -n 1 --json -d <db>
//
// for the entry just written: its "conversation_id" is the resume handle
// and "input_tokens"/"output_tokens" the usage.
type Driver struct{}

// Delivery: the prompt goes to standard input.
func (Driver) Delivery() kit.PromptMode { return kit.PromptStdin }

// InlineInstructions: llm has a system-prompt flag.
func (Driver) InlineInstructions() bool { return false }

// Resumes: llm continues a conversation by its id (--cid).
func (Driver) Resumes() bool { return true }

// DefaultProgram is llm's program name.
func (Driver) DefaultProgram() string { return "llm" }

// Parser: the reply is plain text.
func (Driver) Parser() kit.Parser { return kit.TextParser{} }

// dir is where the llm preset keeps its logs databases, inside the
// vault's folder of the state directory.
const dir = "llm"

func database(a *kit.Attempt) string {
	return filepath.Join(a.StateDir, dir, a.StrandSession+".db")
}

// Prepare creates the folder of the logs databases.
func (Driver) Prepare(a *kit.Attempt) error {
	if !filepath.IsAbs(a.StateDir) {
		return fmt.Errorf("agentrun: the llm preset needs the vault's folder in the state directory (Request.StateDir) for its logs database")
	}
	dir := filepath.Dir(database(a))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("agentrun: llm database directory: %w", err)
	}
	return nil
}

// Argv returns llm's command line.
func (Driver) Argv(a *kit.Attempt) ([]string, error) {
	argv := append(append([]string(nil), a.Program...), "prompt", "-d", database(a), "--log")
	if a.Model != "" {
		argv = append(argv, "-m", a.Model)
	}
	if a.Instructions != "" {
		// One element, so instructions starting with "-" stay a value.
		argv = append(argv, "--system="+a.Instructions)
	}
	if a.Resume != "" {
		argv = append(argv, "--cid", a.Resume)
	}
	return argv, nil
}

// Finish asks llm for the conversation id and usage of the entry just
// written.
func (Driver) Finish(ctx context.Context, a *kit.Attempt, p *kit.Parsed, run func(context.Context, []string) kit.Proc) {
	argv := append(append([]string(nil), a.Program...), "logs", "list", "-n", "1", "--json", "-d", database(a))
	pr := run(ctx, argv)
	if !pr.OK {
		p.Notes = append(p.Notes, "could not read the llm conversation id: "+pr.Status)
		return
	}
	var entry map[string]any
	vals, _ := kit.JSONValues(pr.Stdout)
	for _, raw := range vals {
		if list, ok := decode(raw).([]any); ok && len(list) > 0 {
			entry, _ = list[0].(map[string]any)
		}
	}
	if entry == nil || stringField(entry, "conversation_id") == "" {
		p.Notes = append(p.Notes, "llm logs list printed no conversation id")
		return
	}
	p.Handle = stringField(entry, "conversation_id")
	if in, out := int64Field(entry, "input_tokens"), int64Field(entry, "output_tokens"); in > 0 || out > 0 {
		p.Usage = &kit.Usage{InputTokens: in, OutputTokens: out}
	}
}

// decode decodes a JSON value, numbers kept as json.Number; nil when it
// cannot.
func decode(raw json.RawMessage) any {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

// int64Field reads an integer field of a decoded JSON object.
func int64Field(m map[string]any, key string) int64 {
	n, _ := m[key].(json.Number)
	i, err := n.Int64()
	if err != nil {
		return 0
	}
	return i
}

// stringField reads a string field of a decoded JSON object.
func stringField(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}
