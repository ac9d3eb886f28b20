package agentrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// llmDriver runs Simon Willison's llm CLI:
//
//	llm prompt -d <db> --log [-m M] [-s I]            (new)
//	llm prompt -d <db> --log [-m M] [-s I] --cid <id> (resume)
//
// with the prompt on standard input and the reply as plain text on standard
// output. llm keeps conversations in a SQLite logs database; knotd gives
// every strand session its own private one, <state>/llm/<session>.db in
// the vault's folder of knotd's state directory (Request.StateDir: it is
// the machine's, never the vault's), so the user's own llm history is left
// alone and the newest entry of that database is always this run's (runs of
// one strand never overlap). --log keeps logging on even if the user turned
// it off. After a successful run knotd asks
//
//	llm logs list -n 1 --json -d <db>
//
// for the entry just written: its "conversation_id" is the resume handle
// and "input_tokens"/"output_tokens" the usage.
type llmDriver struct{}

func (llmDriver) delivery() PromptMode     { return PromptStdin }
func (llmDriver) inlineInstructions() bool { return false }
func (llmDriver) resumes() bool            { return true }
func (llmDriver) defaultProgram() string   { return "llm" }
func (llmDriver) limits() Limits           { return Limits{} }
func (llmDriver) parser() outputParser     { return textParser{} }

// llmDir is where the llm preset keeps its logs databases, inside the
// vault's folder of the state directory.
const llmDir = "llm"

func llmDatabase(a *attempt) string {
	return filepath.Join(a.req.StateDir, llmDir, a.req.Session+".db")
}

func (llmDriver) prepare(a *attempt) error {
	if !filepath.IsAbs(a.req.StateDir) {
		return fmt.Errorf("agentrun: the llm preset needs the vault's folder in the state directory (Request.StateDir) for its logs database")
	}
	dir := filepath.Dir(llmDatabase(a))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("agentrun: llm database directory: %w", err)
	}
	return nil
}

func (llmDriver) argv(a *attempt) ([]string, error) {
	argv := append(append([]string(nil), a.program...), "prompt", "-d", llmDatabase(a), "--log")
	if a.model != "" {
		argv = append(argv, "-m", a.model)
	}
	if a.instructions != "" {
		// One element, so instructions starting with "-" stay a value.
		argv = append(argv, "--system="+a.instructions)
	}
	if a.resume != "" {
		argv = append(argv, "--cid", a.resume)
	}
	return argv, nil
}

func (llmDriver) finish(ctx context.Context, a *attempt, p *parsed, run func(context.Context, []string) procResult) {
	argv := append(append([]string(nil), a.program...), "logs", "list", "-n", "1", "--json", "-d", llmDatabase(a))
	pr := run(ctx, argv)
	if pr.startErr != nil || pr.exitCode != 0 {
		p.notes = append(p.notes, "could not read the llm conversation id: "+pr.describe())
		return
	}
	var entry map[string]any
	jsonValues(pr.stdout, func(v any) {
		if list, ok := v.([]any); ok && len(list) > 0 {
			entry, _ = list[0].(map[string]any)
		}
	})
	if entry == nil || stringField(entry, "conversation_id") == "" {
		p.notes = append(p.notes, "llm logs list printed no conversation id")
		return
	}
	p.handle = stringField(entry, "conversation_id")
	if in, out := int64Field(entry, "input_tokens"), int64Field(entry, "output_tokens"); in > 0 || out > 0 {
		p.usage = &Usage{InputTokens: in, OutputTokens: out}
	}
}
