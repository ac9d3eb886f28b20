package transcript

import (
	"encoding/json"
	"strings"
)

// claudeNormalizer reads Claude Code's headless output. stream-json prints
// one event per line: "system" (init), "assistant" and "user" events whose
// "message" is an Anthropic Messages API message (content blocks text,
// thinking, redacted_thinking, tool_use; tool_result in user messages), and
// a final "result" event, which is also the whole output of
// --output-format json: "result" is the reply, "session_id" the resume
// handle, "usage" and "total_cost_usd" the cost, "is_error" (or an
// "error…" subtype) marks a failed turn. Every block is final as soon as
// its event is read: each assistant and user event is a whole message.
type claudeNormalizer struct {
	blocks   []Block
	result   map[string]json.RawMessage
	assisted bool           // an assistant event gave content blocks
	context  int64          // the context of the last assistant message's model call
	skipped  map[string]int // content blocks of unknown types
	events   map[string]int // events of unknown types
}

func (n *claudeNormalizer) event(obj map[string]json.RawMessage) {
	switch t := str(obj, "type"); t {
	case "assistant":
		msg := object(obj, "message")
		for _, b := range contentBlocks(msg) {
			n.assistantBlock(b)
		}
		if u := object(msg, "usage"); u != nil {
			// The result's usage sums the turn's model calls; the last
			// call's input is what the conversation's context holds.
			n.context = integer(u, "input_tokens") + integer(u, "cache_read_input_tokens") + integer(u, "cache_creation_input_tokens")
		}
	case "user":
		for _, b := range contentBlocks(object(obj, "message")) {
			if str(b, "type") == "tool_result" {
				n.blocks = append(n.blocks, claudeToolResult(b, Native))
			}
			// The user's own text (the prompt, or reminders the CLI
			// injects) is not assistant output.
		}
	case "result":
		n.result = obj
	case "system", "stream_event":
		// Session metadata and partial-message deltas: the whole
		// messages follow as assistant events.
	default:
		n.count(&n.events, t)
	}
}

// contentBlocks returns a message's content blocks; a string content is
// not a list of blocks and gives none.
func contentBlocks(msg map[string]json.RawMessage) []map[string]json.RawMessage {
	var blocks []map[string]json.RawMessage
	if raw, ok := msg["content"]; ok {
		_ = json.Unmarshal(raw, &blocks) // a string or other shape: none
	}
	return blocks
}

func (n *claudeNormalizer) assistantBlock(b map[string]json.RawMessage) {
	n.assisted = true
	switch t := str(b, "type"); {
	case t == "text":
		n.blocks = append(n.blocks, Block{Type: BlockText, Fidelity: Native, Text: str(b, "text")})
	case t == "thinking":
		n.blocks = append(n.blocks, Block{Type: BlockThinking, Fidelity: Native, Text: str(b, "thinking")})
	case t == "redacted_thinking":
		n.blocks = append(n.blocks, Block{Type: BlockThinking, Fidelity: Reconstructed, Text: "[redacted thinking]"})
	case t == "tool_use" || t == "server_tool_use" || t == "mcp_tool_use":
		f := Native
		if t != "tool_use" {
			f = Reconstructed
		}
		n.blocks = append(n.blocks, Block{Type: BlockToolUse, Fidelity: f, ID: str(b, "id"), Name: str(b, "name"), Input: rawObject(b["input"])})
	case strings.HasSuffix(t, "_tool_result"):
		// Results of server-side tools (web_search_tool_result…) come in
		// the assistant's own message.
		n.blocks = append(n.blocks, claudeToolResult(b, Reconstructed))
	default:
		n.count(&n.skipped, t)
	}
}

// claudeToolResult reads a tool_result block; content that is not a string
// or text blocks makes it reconstructed.
func claudeToolResult(b map[string]json.RawMessage, f Fidelity) Block {
	content, exact := flatten(b["content"])
	if !exact {
		f = Reconstructed
	}
	return Block{Type: BlockToolResult, Fidelity: f, ToolUseID: str(b, "tool_use_id"), Content: content, IsError: boolean(b, "is_error")}
}

func (n *claudeNormalizer) count(m *map[string]int, t string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[t]++
}

func (n *claudeNormalizer) final() []Block { return n.blocks }

func (n *claudeNormalizer) finish() Decoded {
	out := Decoded{Message: AssistantMessage{Blocks: n.blocks}, ContextTokens: n.context}
	msg := &out.Message
	msg.Notes = append(msg.Notes, noteCounts("Claude content blocks", n.skipped)...)
	msg.Notes = append(msg.Notes, noteCounts("Claude events", n.events)...)
	res := n.result
	if res == nil {
		if n.assisted {
			msg.Notes = append(msg.Notes, "no Claude result event: the run was cut short")
		}
		return out
	}
	out.Ended = true
	out.Reply, out.Handle = str(res, "result"), str(res, "session_id")
	if !n.assisted {
		// --output-format json: the final reply is all there is.
		if b, ok := textBlock(BlockText, out.Reply, TextOnly); ok {
			msg.Blocks = append(msg.Blocks, b)
		}
	}
	if boolean(res, "is_error") || strings.HasPrefix(str(res, "subtype"), "error") {
		msg.Notes = append(msg.Notes, "Claude reported an error ("+str(res, "subtype")+")")
		out.Failure = out.Reply
		if strings.TrimSpace(out.Failure) == "" {
			out.Failure = "Claude reported " + str(res, "subtype")
		}
	}
	if u := object(res, "usage"); u != nil {
		out.Usage = &Usage{
			InputTokens:      integer(u, "input_tokens"),
			OutputTokens:     integer(u, "output_tokens"),
			CacheReadTokens:  integer(u, "cache_read_input_tokens"),
			CacheWriteTokens: integer(u, "cache_creation_input_tokens"),
			CostUSD:          number(res, "total_cost_usd"),
		}
	}
	return out
}
