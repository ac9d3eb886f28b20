package kit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/transcript"
)

// Decoded is everything knotd takes from one run's output in an agent
// CLI's format: the content blocks for the transcript, and the reply, the
// resume handle, the usage and the agent's own report of a failure for the
// run's result. It is the one reading of each CLI's output.
type Decoded struct {
	// Message is the output as an assistant message: every block in
	// order, and notes on what could not be read.
	Message transcript.AssistantMessage
	// Reply is the agent's final reply: Claude's result, the last codex
	// agent_message, Gemini's response, all of a text output.
	Reply string
	// Handle is the conversation's resume handle the output names
	// (Claude's session_id, codex's thread_id, Gemini's session_id), ""
	// when it names none.
	Handle string
	// Usage is the token use and cost the output reports, nil when none.
	// It is what the CLI printed: running totals where the CLI reports
	// those.
	Usage *transcript.Usage
	// ContextTokens is how many tokens the model's context held at the
	// turn's last model call (Claude's last assistant message's input,
	// cached or not; ACP's usage_update used), 0 when the output does not
	// say. ContextWindow is the context size the output reports (ACP's
	// usage_update size), 0 when it reports none.
	ContextTokens, ContextWindow int64
	// Held are the calls the turn ended holding for the user's answer
	// (Claude's tool_deferred), nil when none.
	Held []question.Call
	// Failure is the agent's own report that the turn failed (an is_error
	// result, a turn.failed or error event, an error object), "" when it
	// reported none.
	Failure string
	// SetAside counts the updates that came after the prompt and were
	// left out as a loaded session's replayed history (FormatGeminiACP):
	// with no reply, that is the decoder's doing, not the agent's.
	SetAside int
	// Ended reports that the output's closing event was read: Claude's
	// result, codex's turn.completed or turn.failed, Gemini's response
	// object or result event. A text output always ends.
	Ended bool
	// Events counts the JSON values read as events of the format, Other
	// the lines that were not JSON.
	Events, Other int
}

// A Decoder reads an agent CLI's JSON-lines output as it arrives, one line
// at a time, and hands out each content block once it is final, so that a
// run can be watched while it goes. Finish gives the whole Decoded. A
// Decoder is for one goroutine.
type Decoder struct {
	format transcript.Format
	n      Normalizer // nil for FormatText
	events int
	other  int
	handed int // blocks Line returned
}

// Decoding is one output format an agent's package reads, and how: New
// returns a fresh normalizer for one output (nil for plain text).
type Decoding struct {
	Format transcript.Format
	New    func() Normalizer
}

// NewDecoder returns a decoder for format, read by n; a nil n reads
// plain text (FormatText).
func NewDecoder(format transcript.Format, n Normalizer) *Decoder {
	return &Decoder{format: format, n: n}
}

// Line reads one line of output (without its newline) and returns the
// blocks that became final with it, in order; nil when none did. The
// returned blocks are the caller's. A line that is not one JSON object is
// counted and otherwise skipped. In FormatText, lines are not read: the
// output handed to Finish is the text.
func (d *Decoder) Line(line []byte) []transcript.Block {
	if d.n == nil {
		return nil
	}
	if IsBlank(string(line)) {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(line, &obj) != nil {
		d.other++
		return nil
	}
	d.events++
	d.count(len(line) + 1)
	d.n.Event(obj)
	return d.fresh()
}

// PromptAware is a Normalizer that wants to know where knotd sent its
// prompt (Gemini's replay of a loaded session goes on after it).
type PromptAware interface {
	PromptSent(sent bool)
}

// SizeCounter is a Normalizer that counts the bytes of output it reads.
type SizeCounter interface {
	Count(n int)
}

// PromptSent tells a decoder whose normalizer is PromptAware where knotd
// sent its prompt: PromptSent(false) before the first line, when knotd
// will tell; then PromptSent(true) when it sent the prompt. What came
// before is a loaded session's history. Other formats ignore it.
func (d *Decoder) PromptSent(sent bool) {
	if n, ok := d.n.(PromptAware); ok {
		n.PromptSent(sent)
	}
}

// count tells a SizeCounter normalizer the size of the line it reads next.
func (d *Decoder) count(n int) {
	if c, ok := d.n.(SizeCounter); ok {
		c.Count(n)
	}
}

// fresh returns the final blocks not handed out yet.
func (d *Decoder) fresh() []transcript.Block {
	final := d.n.Final()
	if len(final) <= d.handed {
		return nil
	}
	out := append([]transcript.Block(nil), final[d.handed:]...)
	d.handed = len(final)
	return out
}

// Finish ends the output and returns what it held. output is the captured
// output the lines came from (possibly cut short); it is kept as one
// text-only block when no line was JSON, so nothing the agent printed is
// lost. The Decoder must not be used afterwards.
func (d *Decoder) Finish(output []byte) Decoded {
	if d.n == nil {
		text := strings.ToValidUTF8(string(output), "\uFFFD")
		out := Decoded{Message: transcript.AssistantMessage{Format: d.format, Blocks: []transcript.Block{}}, Reply: text, Ended: true}
		if b, ok := TextBlock(transcript.BlockText, text, transcript.TextOnly); ok {
			out.Message.Blocks = append(out.Message.Blocks, b)
		}
		return out
	}
	out := d.n.Finish()
	out.Message.Format = d.format
	out.Events, out.Other = d.events, d.other
	if out.Message.Blocks == nil {
		out.Message.Blocks = []transcript.Block{}
	}
	if d.other > 0 {
		out.Message.Notes = append(out.Message.Notes, fmt.Sprintf("%d lines of output are not JSON events of this format", d.other))
	}
	if d.events == 0 && !IsBlank(string(output)) {
		b, _ := TextBlock(transcript.BlockText, strings.ToValidUTF8(string(output), "\uFFFD"), transcript.TextOnly)
		out.Message.Blocks = append(out.Message.Blocks, b)
		out.Message.Notes = append(out.Message.Notes, "the output holds no JSON; it is kept as text")
	}
	return out
}

// Decode reads a whole output in format, read by n (nil for plain text):
// JSON lines, a pretty-printed document (Gemini's --output-format json), or
// either with other text around it. It never fails on the output itself:
// what it cannot read is said in the message's Notes.
func Decode(format transcript.Format, n Normalizer, output []byte) Decoded {
	d := NewDecoder(format, n)
	if d.n == nil {
		return d.Finish(output)
	}
	vals, bad := JSONValues(output)
	for _, v := range vals {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			bad++
			continue
		}
		d.events++
		d.count(len(v) + 1)
		d.n.Event(obj)
	}
	d.other = bad
	return d.Finish(output)
}
