package transcript

import (
	"encoding/json"
	"slices"
)

// geminiNormalizer reads Gemini CLI's headless output
// (packages/core/src/output/types.ts of google-gemini/gemini-cli).
// stream-json prints one event per line: init, message (role user or
// assistant, content, delta when it is a chunk), tool_use (tool_id,
// tool_name, parameters), tool_result (tool_id, status, output, error),
// error (severity, message) and result (status, error, stats with
// input_tokens, output_tokens, cached). --output-format json prints one
// object with the final "response", "stats" (per-model token counts) and
// "error".
type geminiNormalizer struct {
	blocks  []Block
	chunk   bool // the last block is an assistant text still receiving deltas
	usage   *Usage
	notes   []string
	skipped map[string]int
	stream  bool // stream-json events were seen
	result  bool // and the result event
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
		if delta && n.chunk {
			n.blocks[len(n.blocks)-1].Text += text
		} else {
			n.blocks = append(n.blocks, Block{Type: BlockText, Fidelity: Native, Text: text})
		}
		chunk = delta
	case "tool_use":
		n.blocks = append(n.blocks, Block{Type: BlockToolUse, Fidelity: Native, ID: str(obj, "tool_id"), Name: str(obj, "tool_name"), Input: rawObject(obj["parameters"])})
	case "tool_result":
		b := Block{Type: BlockToolResult, Fidelity: Native, ToolUseID: str(obj, "tool_id"), Content: str(obj, "output"), IsError: str(obj, "status") == "error"}
		if e := object(obj, "error"); e != nil && b.Content == "" {
			b.Content = str(e, "message")
		}
		n.blocks = append(n.blocks, b)
	case "error":
		n.notes = append(n.notes, "gemini "+str(obj, "severity")+": "+str(obj, "message"))
	case "result":
		n.result = true
		if str(obj, "status") == "error" {
			n.notes = append(n.notes, "gemini reported an error: "+str(object(obj, "error"), "message"))
		}
		if s := object(obj, "stats"); s != nil {
			n.usage = &Usage{InputTokens: integer(s, "input_tokens"), OutputTokens: integer(s, "output_tokens"), CacheReadTokens: integer(s, "cached")}
		}
	case "init":
	default:
		if n.skipped == nil {
			n.skipped = map[string]int{}
		}
		n.skipped[t]++
	}
	n.chunk = chunk
}

// object reads the single object of --output-format json.
func (n *geminiNormalizer) object(obj map[string]json.RawMessage) {
	if b, ok := textBlock(BlockText, str(obj, "response"), TextOnly); ok {
		n.blocks = append(n.blocks, b)
	}
	if e := object(obj, "error"); e != nil {
		n.notes = append(n.notes, "gemini reported an error ("+str(e, "type")+"): "+str(e, "message"))
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
		u.add(Usage{
			InputTokens:     integer(tok, "prompt"),
			OutputTokens:    integer(tok, "candidates") + integer(tok, "thoughts"),
			CacheReadTokens: integer(tok, "cached"),
		})
	}
	n.usage = u
}

func (n *geminiNormalizer) finish() (AssistantMessage, *Usage) {
	notes := append(n.notes, noteCounts("gemini events", n.skipped)...)
	if n.stream && !n.result {
		notes = append(notes, "no gemini result event: the run was cut short")
	}
	return AssistantMessage{Blocks: n.blocks, Notes: notes}, n.usage
}
