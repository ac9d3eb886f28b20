package transcript

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

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
	blocks  []Block
	chunk   bool // the last block is an assistant text still receiving deltas
	usage   *Usage
	notes   []string
	skipped map[string]int
	stream  bool // stream-json events were seen
	ended   bool // the result event, or the json object, was read
	reply   strings.Builder
	handle  string
	failure string
}

func (n *geminiNormalizer) event(obj map[string]json.RawMessage) {
	t := str(obj, "type")
	if t == "" {
		n.object(obj)
		return
	}
	n.stream = true
	chunk := false
	switch t {
	case "message":
		if str(obj, "role") != "assistant" {
			break // the prompt echoed back
		}
		text, delta := str(obj, "content"), boolean(obj, "delta")
		n.reply.WriteString(text)
		if delta && n.chunk {
			n.blocks[len(n.blocks)-1].Text += text
		} else {
			n.blocks = append(n.blocks, Block{Type: BlockText, Fidelity: Native, Text: text})
		}
		chunk = delta
	case "tool_use":
		n.reply.Reset()
		n.blocks = append(n.blocks, Block{Type: BlockToolUse, Fidelity: Native, ID: str(obj, "tool_id"), Name: str(obj, "tool_name"), Input: rawObject(obj["parameters"])})
	case "tool_result":
		b := Block{Type: BlockToolResult, Fidelity: Native, ToolUseID: str(obj, "tool_id"), Content: str(obj, "output"), IsError: str(obj, "status") == "error"}
		if e := object(obj, "error"); e != nil && b.Content == "" {
			b.Content = str(e, "message")
		}
		n.blocks = append(n.blocks, b)
	case "error":
		n.notes = append(n.notes, "gemini "+str(obj, "severity")+": "+str(obj, "message"))
		if str(obj, "severity") == "error" {
			n.failure = cmp.Or(str(obj, "message"), "error")
		}
	case "result":
		n.ended = true
		if str(obj, "status") == "error" {
			msg := str(object(obj, "error"), "message")
			n.notes = append(n.notes, "gemini reported an error: "+msg)
			n.failure = cmp.Or(msg, "Gemini reported "+str(object(obj, "error"), "type"))
		}
		if s := object(obj, "stats"); s != nil {
			n.usage = &Usage{InputTokens: integer(s, "input_tokens"), OutputTokens: integer(s, "output_tokens"), CacheReadTokens: integer(s, "cached")}
		}
	case "init":
		n.handle = str(obj, "session_id")
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
	n.reply.WriteString(str(obj, "response"))
	n.handle = str(obj, "session_id")
	if b, ok := textBlock(BlockText, str(obj, "response"), TextOnly); ok {
		n.blocks = append(n.blocks, b)
	}
	if e := object(obj, "error"); e != nil {
		n.notes = append(n.notes, "gemini reported an error ("+str(e, "type")+"): "+str(e, "message"))
		n.failure = cmp.Or(str(e, "message"), "Gemini reported "+str(e, "type"))
	}
	models := object(object(obj, "stats"), "models")
	if len(models) == 0 {
		return
	}
	names := make([]string, 0, len(models))
	for name := range models {
		names = append(names, name)
	}
	slices.Sort(names)
	u := &Usage{}
	for _, name := range names {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(models[name], &m) // not an object: no tokens
		tok := object(m, "tokens")
		u.Add(Usage{
			InputTokens:     integer(tok, "prompt"),
			OutputTokens:    integer(tok, "candidates") + integer(tok, "thoughts"),
			CacheReadTokens: integer(tok, "cached"),
		})
	}
	n.usage = u
}

func (n *geminiNormalizer) final() []Block {
	if n.chunk {
		return n.blocks[:len(n.blocks)-1]
	}
	return n.blocks
}

func (n *geminiNormalizer) finish() Decoded {
	notes := append(n.notes, noteCounts("gemini events", n.skipped)...)
	if n.stream && !n.ended {
		notes = append(notes, "no gemini result event: the run was cut short")
	}
	return Decoded{
		Message: AssistantMessage{Blocks: n.blocks, Notes: notes},
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
