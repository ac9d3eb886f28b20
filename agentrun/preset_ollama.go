package agentrun

import "strings"

// ollamaDriver runs a local model with Ollama:
//
//	ollama run --hidethinking MODEL
//
// with the prompt on standard input and the reply as plain text on standard
// output (--hidethinking keeps a thinking model's reasoning out of it).
// ollama run has no conversation to resume and no system-prompt flag, so
// every run starts afresh: the Session line always says "new", instructions
// go before the Event Context, and the Previous tie-off, the only memory the
// model gets, reaches further back than for the CLIs that remember
// (ollamaLimits).
type ollamaDriver struct{}

// ollamaLimits replays twice as many tie-off sections as the default, since
// they are the model's only history, within the default byte budget: many
// local models run with a context of a few thousand tokens, which must hold
// the note as well.
var ollamaLimits = Limits{TieOffSections: 10}

func (ollamaDriver) delivery() PromptMode     { return PromptStdin }
func (ollamaDriver) inlineInstructions() bool { return true }
func (ollamaDriver) resumes() bool            { return false }
func (ollamaDriver) defaultProgram() string   { return "ollama" }
func (ollamaDriver) limits() Limits           { return ollamaLimits }
func (ollamaDriver) parser() outputParser     { return textParser{} }

func (ollamaDriver) argv(a *attempt) ([]string, error) {
	return append(append([]string(nil), a.program...), "run", "--hidethinking", a.model), nil
}

// textParser takes all of standard output as the reply.
type textParser struct{}

func (textParser) finish(stdout []byte, truncated bool, _ string) (parsed, error) {
	if len(strings.TrimSpace(string(stdout))) == 0 {
		return parsed{}, errNoOutput
	}
	p := parsed{reply: string(stdout)}
	if truncated {
		p.notes = append(p.notes, "the reply was cut at the standard output limit")
	}
	return p, nil
}
