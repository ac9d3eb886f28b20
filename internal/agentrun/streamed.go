package agentrun

import "github.com/knotd/knotd/internal/transcript"

// rawParser is an outputParser for an agent whose output is not a stream
// of content blocks (a command, llm, ollama): its standard output is handed
// to Request.OnOutput as it comes, as text-only blocks (livetext), and
// streamed makes the attempt's message start with those blocks.
type rawParser interface {
	outputParser
	streamed(p *parsed, sent []transcript.Block)
}

// streamed makes a plain-text reply's message the blocks handed over live
// (all of the output the Result keeps), instead of one block of it.
func (textParser) streamed(p *parsed, sent []transcript.Block) {
	if len(sent) == 0 {
		return
	}
	if p.message == nil {
		p.message = &transcript.AssistantMessage{Format: transcript.FormatText}
	}
	p.message.Blocks = sent
}

// streamed makes a JSON reply's message the output as it was handed over
// live, then the reply read from it.
func (jsonParser) streamed(p *parsed, sent []transcript.Block) {
	if len(sent) == 0 {
		return
	}
	if p.message == nil {
		p.message = &transcript.AssistantMessage{Format: transcript.FormatText, Blocks: []transcript.Block{}}
	}
	p.message.Blocks = append(append([]transcript.Block(nil), sent...), p.message.Blocks...)
}
