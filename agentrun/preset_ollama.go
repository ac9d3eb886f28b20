package agentrun

import (
	"fmt"
	"strings"

	"github.com/knotd/knotd/agents"
	"github.com/knotd/knotd/transcript"
)

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

// textParser takes all of standard output as the reply. A reply cut at
// the standard output limit ends with a line that says so, so that the
// tie-off shows it.
type textParser struct{}

func (textParser) finish(stdout []byte, truncated bool, _ string) (parsed, error) {
	if len(strings.TrimSpace(string(stdout))) == 0 {
		return parsed{}, errNoOutput
	}
	p := parsed{reply: string(stdout), message: textMessage(string(stdout), truncated)}
	if truncated {
		p.notes = append(p.notes, "the reply was cut at the standard output limit")
		p.reply = cleanReply(p.reply) + "\n\n" + fmt.Sprintf(cutMark, len(stdout))
	}
	return p, nil
}

// cutMark ends a reply cut at the standard output limit (its size in
// bytes).
const cutMark = "[knotd: the reply was cut here, at the %d-byte standard output limit]"

// textMessage is text as a transcript message of one text-only block.
func textMessage(text string, truncated bool) *transcript.AssistantMessage {
	d, err := agents.Decode(transcript.FormatText, []byte(text))
	if err != nil {
		panic("agentrun: " + err.Error()) // the text format is always read
	}
	d.Message.Truncated = truncated
	return &d.Message
}
