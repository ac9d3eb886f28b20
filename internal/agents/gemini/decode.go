package gemini

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/agents/acp"
	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/transcript"
)

// Gemini CLI's output formats, as written in transcripts.
const (
	// FormatJSON is `gemini --output-format json`: one object with the
	// final response only.
	FormatJSON transcript.Format = "gemini-json"
	// FormatStreamJSON is `gemini --output-format stream-json`: init,
	// message, tool_use, tool_result, error and result events.
	FormatStreamJSON transcript.Format = "gemini-stream-json"
	// FormatACP is `gemini --acp`: the agent's side of an Agent Client
	// Protocol conversation, JSON-RPC 2.0 messages, one a line.
	FormatACP transcript.Format = "gemini-acp"
)

// Formats are the output formats this package reads: the two of the
// headless CLI (older transcripts) and ACP, read by the ACP normalizer.
var Formats = []kit.Decoding{
	{Format: FormatJSON, New: newNormalizer},
	{Format: FormatStreamJSON, New: newNormalizer},
	{Format: FormatACP, New: func() kit.Normalizer { return acp.NewNormalizer("gemini", false) }},
}

func newNormalizer() kit.Normalizer { return &geminiNormalizer{} }

// geminiNormalizer reads Gemini CLI's headless output
// (packages/core/src/output/types.ts of google-gemini/gemini-cli).
// stream-json prints one event per line: init, message (role user or
// assistant, content, delta when it is a chunk), tool_use (tool_id,
// tool_name, parameters), tool_result (tool_id, status, output, error),
// error (severity, message) and result (status, error, stats with
// input_tokens, output_tokens, cached). --output-format json prints one
// object with the final "response", "stats" (per-model token counts) and
// "error", and "session_id" the resume handle. In stream-json the reply is
// the assistant's text after its last tool call, and every block but an
// assistant text still receiving deltas is final.
type geminiNormalizer struct {
	blocks  []transcript.Block
	chunk   bool // the last block is an assistant text still receiving deltas
	usage   *transcript.Usage
	notes   []string
	skipped map[string]int
	stream  bool // stream-json events were seen
	ended   bool // the result event, or the json object, was read
	reply   strings.Builder
	handle  string
	failure string
}

func (n *geminiNormalizer) Event(obj map[string]json.RawMessage) {
	t := kit.Str(obj, "type")
	if t == "" {
		n.object(obj)
		return
	}
	n.stream = true
	chunk := false
	switch t {
	case "message":
		if kit.Str(obj, "role") != "assistant" {
			break // the prompt echoed back
		}
		text, delta := kit.Str(obj, "content"), kit.Boolean(obj, "delta")
		n.reply.WriteString(text)
		if delta && n.chunk {
			n.blocks[len(n.blocks)-1].Text += text
		} else {
			n.blocks = append(n.blocks, transcript.Block{Type: transcript.BlockText, Fidelity: transcript.Native, Text: text})
		}
		chunk = delta
	case "tool_use":
		n.reply.Reset()
		n.blocks = append(n.blocks, transcript.Block{Type: transcript.BlockToolUse, Fidelity: transcript.Native, ID: kit.Str(obj, "tool_id"), Name: kit.Str(obj, "tool_name"), Input: kit.RawObject(obj["parameters"])})
	case "tool_result":
		b := transcript.Block{Type: transcript.BlockToolResult, Fidelity: transcript.Native, ToolUseID: kit.Str(obj, "tool_id"), Content: kit.Str(obj, "output"), IsError: kit.Str(obj, "status") == "error"}
		if e := kit.Object(obj, "error"); e != nil && b.Content == "" {
			b.Content = kit.Str(e, "message")
		}
		n.blocks = append(n.blocks, b)
	case "error":
		n.notes = append(n.notes, "gemini "+kit.Str(obj, "severity")+": "+kit.Str(obj, "message"))
		if kit.Str(obj, "severity") == "error" {
			n.failure = cmp.Or(kit.Str(obj, "message"), "error")
		}
	case "result":
		n.ended = true
		if kit.Str(obj, "status") == "error" {
			msg := kit.Str(kit.Object(obj, "error"), "message")
			n.notes = append(n.notes, "gemini reported an error: "+msg)
			n.failure = cmp.Or(msg, "Gemini reported "+kit.Str(kit.Object(obj, "error"), "type"))
		}
		if s := kit.Object(obj, "stats"); s != nil {
			n.usage = &transcript.Usage{InputTokens: kit.Integer(s, "input_tokens"), OutputTokens: kit.Integer(s, "output_tokens"), CacheReadTokens: kit.Integer(s, "cached")}
		}
	case "init":
		n.handle = kit.Str(obj, "session_id")
	default:
		n.skipped = increment(n.skipped, t)
	}
	n.chunk = chunk
}

// object reads the single object of --output-format json.
func (n *geminiNormalizer) object(obj map[string]json.RawMessage) {
	if !hasAny(obj, "response", "error", "session_id", "stats") {
		n.skipped = increment(n.skipped, "object without response")
		return
	}
	n.ended = true
	n.reply.Reset()
	n.reply.WriteString(kit.Str(obj, "response"))
	n.handle = kit.Str(obj, "session_id")
	if b, ok := kit.TextBlock(transcript.BlockText, kit.Str(obj, "response"), transcript.TextOnly); ok {
		n.blocks = append(n.blocks, b)
	}
	if e := kit.Object(obj, "error"); e != nil {
		n.notes = append(n.notes, "gemini reported an error ("+kit.Str(e, "type")+"): "+kit.Str(e, "message"))
		n.failure = cmp.Or(kit.Str(e, "message"), "Gemini reported "+kit.Str(e, "type"))
	}
	models := kit.Object(kit.Object(obj, "stats"), "models")
	if len(models) == 0 {
		return
	}
	names := make([]string, 0, len(models))
	for name := range models {
		names = append(names, name)
	}
	slices.Sort(names)
	u := &transcript.Usage{}
	for _, name := range names {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(models[name], &m) // not an object: no tokens
		tok := kit.Object(m, "tokens")
		u.Add(transcript.Usage{
			InputTokens:     kit.Integer(tok, "prompt"),
			OutputTokens:    kit.Integer(tok, "candidates") + kit.Integer(tok, "thoughts"),
			CacheReadTokens: kit.Integer(tok, "cached"),
		})
	}
	n.usage = u
}

func (n *geminiNormalizer) Final() []transcript.Block {
	if n.chunk {
		return n.blocks[:len(n.blocks)-1]
	}
	return n.blocks
}

func (n *geminiNormalizer) Finish() kit.Decoded {
	notes := append(n.notes, kit.NoteCounts("gemini events", n.skipped)...)
	if n.stream && !n.ended {
		notes = append(notes, "no gemini result event: the run was cut short")
	}
	return kit.Decoded{
		Message: transcript.AssistantMessage{Blocks: n.blocks, Notes: notes},
		Reply:   n.reply.String(), Handle: n.handle, Usage: n.usage, Failure: n.failure, Ended: n.ended,
	}
}

// hasAny reports whether obj has one of keys.
func hasAny(obj map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := obj[k]; ok {
			return true
		}
	}
	return false
}

// increment adds one to m[k], making m when it is nil.
func increment(m map[string]int, k string) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[k]++
	return m
}
