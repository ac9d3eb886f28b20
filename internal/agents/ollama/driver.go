// Package ollama is knotd's agent for a local model run with Ollama.
package ollama

import "github.com/knotd/knotd/internal/agents/kit"

// Driver runs a local model with Ollama:
//
//	ollama run --hidethinking MODEL
//
// with the prompt on standard input and the reply as plain text on standard
// output (--hidethinking keeps a thinking model's reasoning out of it).
// ollama run has no conversation to resume and no system-prompt flag, so
// every run starts afresh: the Session line always says "new", instructions
// go before the Event Context, and the Previous tie-off, the only memory the
// model gets, reaches further back than for the CLIs that remember
// (limits).
type Driver struct{}

// limits replays twice as many tie-off sections as the default, since
// they are the model's only history, within the default byte budget: many
// local models run with a context of a few thousand tokens, which must hold
// the note as well.
var limits = kit.Limits{TieOffSections: 10}

// Delivery: the prompt goes to standard input.
func (Driver) Delivery() kit.PromptMode { return kit.PromptStdin }

// InlineInstructions: ollama run has no system-prompt flag.
func (Driver) InlineInstructions() bool { return true }

// Resumes: ollama run has no conversation to resume.
func (Driver) Resumes() bool { return false }

// DefaultProgram is Ollama's program name.
func (Driver) DefaultProgram() string { return "ollama" }

// Limits are ollama's prompt limit defaults.
func (Driver) Limits() kit.Limits { return limits }

// Parser: the reply is plain text.
func (Driver) Parser() kit.Parser { return kit.TextParser{} }

// Argv returns ollama's command line.
func (Driver) Argv(a *kit.Attempt) ([]string, error) {
	return append(append([]string(nil), a.Program...), "run", "--hidethinking", a.Model), nil
}
