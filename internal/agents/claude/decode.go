package claude

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/transcript"
)

// Claude Code's output formats, as written in transcripts.
const (
	// FormatJSON is `claude -p --output-format json`: one result object
	// with the final reply only.
	FormatJSON transcript.Format = "claude-json"
	// FormatStreamJSON is `claude -p --output-format stream-json
	// --verbose`: one JSON event per line, with every content block.
	FormatStreamJSON transcript.Format = "claude-stream-json"
)

// Formats are the output formats this package reads, both with the one
// normalizer.
var Formats = []kit.Decoding{{Format: FormatJSON, New: newNormalizer}, {Format: FormatStreamJSON, New: newNormalizer}}

func newNormalizer() kit.Normalizer { return &claudeNormalizer{} }

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
	blocks   []transcript.Block
	result   map[string]json.RawMessage
	assisted bool           // an assistant event gave content blocks
	context  int64          // the context of the last assistant message's model call
	skipped  map[string]int // content blocks of unknown types
	events   map[string]int // events of unknown types
}

func (n *claudeNormalizer) Event(obj map[string]json.RawMessage) {
	switch t := kit.Str(obj, "type"); t {
	case "assistant":
		msg := kit.Object(obj, "message")
		for _, b := range contentBlocks(msg) {
			n.assistantBlock(b)
		}
		if u := kit.Object(msg, "usage"); u != nil {
			// The result's usage sums the turn's model calls; the last
			// call's input is what the conversation's context holds.
			n.context = kit.Integer(u, "input_tokens") + kit.Integer(u, "cache_read_input_tokens") + kit.Integer(u, "cache_creation_input_tokens")
		}
	case "user":
		for _, b := range contentBlocks(kit.Object(obj, "message")) {
			if kit.Str(b, "type") == "tool_result" {
				n.blocks = append(n.blocks, claudeToolResult(b, transcript.Native))
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
	switch t := kit.Str(b, "type"); {
	case t == "text":
		n.blocks = append(n.blocks, transcript.Block{Type: transcript.BlockText, Fidelity: transcript.Native, Text: kit.Str(b, "text")})
	case t == "thinking":
		n.blocks = append(n.blocks, transcript.Block{Type: transcript.BlockThinking, Fidelity: transcript.Native, Text: kit.Str(b, "thinking")})
	case t == "redacted_thinking":
		n.blocks = append(n.blocks, transcript.Block{Type: transcript.BlockThinking, Fidelity: transcript.Reconstructed, Text: "[redacted thinking]"})
	case t == "tool_use" || t == "server_tool_use" || t == "mcp_tool_use":
		f := transcript.Native
		if t != "tool_use" {
			f = transcript.Reconstructed
		}
		n.blocks = append(n.blocks, transcript.Block{Type: transcript.BlockToolUse, Fidelity: f, ID: kit.Str(b, "id"), Name: kit.Str(b, "name"), Input: kit.RawObject(b["input"])})
	case strings.HasSuffix(t, "_tool_result"):
		// Results of server-side tools (web_search_tool_result…) come in
		// the assistant's own message.
		n.blocks = append(n.blocks, claudeToolResult(b, transcript.Reconstructed))
	default:
		n.count(&n.skipped, t)
	}
}

// claudeToolResult reads a tool_result block; content that is not a string
// or text blocks makes it reconstructed.
func claudeToolResult(b map[string]json.RawMessage, f transcript.Fidelity) transcript.Block {
	content, exact := kit.Flatten(b["content"])
	if !exact {
		f = transcript.Reconstructed
	}
	return transcript.Block{Type: transcript.BlockToolResult, Fidelity: f, ToolUseID: kit.Str(b, "tool_use_id"), Content: content, IsError: kit.Boolean(b, "is_error")}
}

func (n *claudeNormalizer) count(m *map[string]int, t string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[t]++
}

func (n *claudeNormalizer) Final() []transcript.Block { return n.blocks }

func (n *claudeNormalizer) Finish() kit.Decoded {
	out := kit.Decoded{Message: transcript.AssistantMessage{Blocks: n.blocks}, ContextTokens: n.context}
	msg := &out.Message
	msg.Notes = append(msg.Notes, kit.NoteCounts("Claude content blocks", n.skipped)...)
	msg.Notes = append(msg.Notes, kit.NoteCounts("Claude events", n.events)...)
	res := n.result
	if res == nil {
		if n.assisted {
			msg.Notes = append(msg.Notes, "no Claude result event: the run was cut short")
		}
		return out
	}
	out.Ended = true
	out.Reply, out.Handle = kit.Str(res, "result"), kit.Str(res, "session_id")
	if !n.assisted {
		// --output-format json: the final reply is all there is.
		if b, ok := kit.TextBlock(transcript.BlockText, out.Reply, transcript.TextOnly); ok {
			msg.Blocks = append(msg.Blocks, b)
		}
	}
	if kit.Boolean(res, "is_error") || strings.HasPrefix(kit.Str(res, "subtype"), "error") {
		msg.Notes = append(msg.Notes, "Claude reported an error ("+kit.Str(res, "subtype")+")")
		out.Failure = out.Reply
		if strings.TrimSpace(out.Failure) == "" {
			out.Failure = "Claude reported " + kit.Str(res, "subtype")
		}
	}
	if kit.Str(res, "stop_reason") == "tool_deferred" {
		if c, ok := n.held(kit.Object(res, "deferred_tool_use")); ok {
			out.Held = []question.Call{c}
		}
	}
	if u := kit.Object(res, "usage"); u != nil {
		out.Usage = &transcript.Usage{
			InputTokens:      kit.Integer(u, "input_tokens"),
			OutputTokens:     kit.Integer(u, "output_tokens"),
			CacheReadTokens:  kit.Integer(u, "cache_read_input_tokens"),
			CacheWriteTokens: kit.Integer(u, "cache_creation_input_tokens"),
			CostUSD:          kit.Number(res, "total_cost_usd"),
		}
	}
	return out
}

// MaxWhy bounds a held call's Why: what the model said before asking.
const MaxWhy = 1000

// held returns the call a result's deferred_tool_use names (Claude Code
// 2.1.330: {"id", "name", "input"}), with the text the model said just
// before it, since the turn's last tool call or result, as its Why.
func (n *claudeNormalizer) held(d map[string]json.RawMessage) (question.Call, bool) {
	name := kit.Str(d, "name")
	if name == "" {
		return question.Call{}, false
	}
	c := question.Call{Tool: name, Input: kit.Compact(d["input"]), ToolUseID: kit.Str(d, "id")}
	at := len(n.blocks)
	for i, b := range n.blocks {
		if b.Type == transcript.BlockToolUse && b.ID == c.ToolUseID {
			at = i
		}
	}
	var texts []string
	for i := at - 1; i >= 0; i-- {
		b := n.blocks[i]
		if b.Type == transcript.BlockToolUse || b.Type == transcript.BlockToolResult {
			break
		}
		if b.Type == transcript.BlockText && strings.TrimSpace(b.Text) != "" {
			texts = append([]string{strings.TrimSpace(b.Text)}, texts...)
		}
	}
	c.Why = bound(strings.Join(texts, "\n\n"), MaxWhy)
	return c, true
}

// bound cuts s to at most max bytes, at a rune boundary, marking the cut.
func bound(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
