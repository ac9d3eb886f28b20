package acp

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/transcript"
)

// Format is any agent speaking the Agent Client Protocol on its standard
// output, as knotd's generic ACP client hands it the lines of the prompt
// turn: session/update notifications and the prompt's response (usage from
// its usage field and usage_update). The value is written in transcripts.
const Format transcript.Format = "acp"

// Formats are the output formats this package reads.
var Formats = []kit.Decoding{{Format: Format, New: func() kit.Normalizer { return NewNormalizer("ACP agent", true) }}}

// NewNormalizer returns the ACP normalizer: agent is the agent's name in
// notes; generic reads Format, without Gemini's history replay.
func NewNormalizer(agent string, generic bool) kit.Normalizer {
	return &geminiACPNormalizer{agent: agent, generic: generic}
}

// geminiACPNormalizer reads what Gemini CLI prints in ACP mode (gemini
// --acp): the agent's side of a JSON-RPC 2.0 conversation, one message a
// line (Agent Client Protocol, as Gemini CLI 0.61.0 speaks it):
//
//   - session/update notifications: agent_message_chunk (text, in chunks),
//     agent_thought_chunk (thinking), tool_call (a tool call that needed no
//     approval) and tool_call_update (its end: status completed or
//     failed, content a list of text, diff or other items);
//   - session/request_permission requests: a tool call that needs approval
//     (toolCall); the client's answer is not in this output, and a refused
//     call gets no update;
//   - responses to the client's requests: the prompt's has stopReason and
//     the turn's tokens in _meta.quota.token_count; an error response is a
//     failure.
//
// A loaded session's history is replayed as session/update notifications,
// and those are left out. Gemini CLI 0.61.0 sends the replay without
// waiting for it, and nothing marks its end: the load's response comes
// after its first update, and available_commands_update (sent from a
// timer) in the middle of it once the history outgrows the pipe. So:
//
//   - every update before the prompt was sent is history (knotd's client
//     says when it sent it: Decoder.PromptSent);
//   - after it, the rest of the replay, whole messages of the history: a
//     user_message_chunk (the live turn sends none) and the model's answer
//     that follows it (thoughts, one agent_message_chunk with the whole
//     text, its tool calls, already ended), and after a replayed tool call
//     the model's next answer;
//   - the live turn is every other update: the first that is not such a
//     continuation of the replay, and all after it.
//
// The replayed updates are counted in a note, those after the prompt
// apart; and an empty reply after updates were set aside after the prompt
// is the decoder's failure, not the agent's (Decoded.SetAside).
//
// The reply is the text of the turn's agent_message_chunk updates; every
// block but a text or thinking still receiving chunks is final.
//
// With generic set it reads Format, any ACP agent's prompt turn as
// knotd's ACP client hands it over (no history replay: a
// user_message_chunk is skipped), with the turn's tokens in the prompt
// response's usage field, a cost in usage_update, and each plan as a
// reconstructed thinking block listing its entries.
type geminiACPNormalizer struct {
	agent   string // the agent's name in notes
	generic bool
	blocks  []transcript.Block
	// chunk is the type of the last block while it still receives chunks.
	chunk   transcript.BlockType
	tools   map[string]bool // tool_use ids seen
	results map[string]bool // tool_result ids seen
	usage   *transcript.Usage
	used    int64 // usage_update's used: the context's tokens
	size    int64 // usage_update's size: the context's size
	notes   []string
	skipped map[string]int
	// marked: knotd says when it sent the prompt (promptSent), prompted
	// once it did.
	marked, prompted bool
	// owed is what the replay still owes after the prompt: owedAnswer
	// after a replayed user message or tool call, owedTools after the
	// replayed answer's text.
	owed     int
	live     bool // the live turn began
	bytes    int  // of the output read, the lines' newlines counted
	replayed int
	// lateReplay counts the replayed updates after the prompt was sent,
	// lateAfterLive those of them after the live turn began.
	lateReplay, lateAfterLive int
	answered                  bool // the prompt's response was seen
	reply                     strings.Builder
	handle                    string // a new session's id
	failure                   string

	// turnInput is the input tokens of the turn's model calls, summed
	// (the prompt response's _meta.quota.token_count, Gemini CLI's): the
	// context's tokens when no usage_update says (Gemini CLI 0.61.0
	// sends none). A turn of several calls makes it more than the context
	// held at its last call: the estimate errs high, so a conversation
	// starts afresh early, never fills up.
	turnInput int64
}

// replayFits is the output, in bytes, that fits in any pipe's buffer (16
// KiB on macOS, 64 KiB on Linux): less than that before Gemini CLI's
// available_commands_update, and no write of the replay waited, so the
// update came after the whole replay.
const replayFits = 16 << 10

// What the replay still owes (geminiACPNormalizer.owed).
const (
	owedNothing = iota
	owedAnswer
	owedTools
)

// promptSent: knotd will say when it sends the prompt (sent false), or
// sent it now (sent true); the updates read before were history.
// PromptSent implements kit.PromptAware (Gemini only: the generic agent
// needs no replay boundary).
func (n *geminiACPNormalizer) PromptSent(sent bool) {
	if n.generic {
		return
	}
	n.promptSentGemini(sent)
}

func (n *geminiACPNormalizer) promptSentGemini(sent bool) { n.marked, n.prompted = true, sent }

// replaying reports whether an update of kind kind is the loaded
// session's replayed history (not the generic format's).
func (n *geminiACPNormalizer) replaying(kind string, u map[string]json.RawMessage) bool {
	switch kind {
	case "available_commands_update":
		if !n.prompted && n.bytes < replayFits {
			// The pipe never filled: the replay ended before it (the
			// CLI's timer fires once a write waits, or the replay is
			// over). A user message still owed an answer is one whose
			// turn failed: the next answer is the live turn's.
			n.owed = owedNothing
		}
		return false
	case "current_mode_update", "session_info_update", "config_option_update", "usage_update":
		return false // neither history nor the reply
	}
	replayedTool := kind == "tool_call" && (kit.Str(u, "status") == "completed" || kit.Str(u, "status") == "failed")
	was := n.owed
	switch {
	case kind == "user_message_chunk":
		n.owed = owedAnswer
	case was == owedAnswer && kind == "agent_thought_chunk":
	case was == owedAnswer && kind == "agent_message_chunk":
		n.owed = owedTools
	case was != owedNothing && replayedTool:
		n.owed = owedAnswer // the model's answer to the tool's result follows
	default:
		n.owed = owedNothing
		if n.marked && !n.prompted {
			return true // before the prompt, whatever it is
		}
		n.live = true
		return false
	}
	if n.prompted {
		n.lateReplay++
		if n.live {
			n.lateAfterLive++
		}
	}
	return true
}

func (n *geminiACPNormalizer) Event(obj map[string]json.RawMessage) {
	method := kit.Str(obj, "method")
	_, isRequest := obj["id"]
	switch {
	case method == "session/update":
		n.update(kit.Object(kit.Object(obj, "params"), "update"))
		return
	case method == "session/request_permission" && isRequest:
		n.toolUse(kit.Object(kit.Object(obj, "params"), "toolCall"))
	case n.generic && isRequest && (method == "fs/read_text_file" || method == "fs/write_text_file"):
		// knotd's client records each file system call as a tool call of
		// its own (agentrun's acpClient): nothing to add, nothing skipped.
	case method != "":
		n.skip("requests", method)
	case kit.Object(obj, "error") != nil:
		e := kit.Object(obj, "error")
		n.notes = append(n.notes, fmt.Sprintf("%s answered an error (code %d): %s", n.agent, kit.Integer(e, "code"), kit.Str(e, "message")))
		n.failure = kit.Str(e, "message")
		n.answered = true // a request failed: the conversation ends there
	default:
		n.response(kit.Object(obj, "result"))
	}
	n.chunk = ""
}

// response reads a result; the prompt's is the one with a stopReason.
func (n *geminiACPNormalizer) response(res map[string]json.RawMessage) {
	if id := kit.Str(res, "sessionId"); id != "" {
		n.handle = id
	}
	stop := kit.Str(res, "stopReason")
	if stop == "" {
		return
	}
	n.answered = true
	if stop != "end_turn" {
		n.notes = append(n.notes, n.agent+" ended the turn with stopReason "+stop)
	}
	if tc := kit.Object(kit.Object(kit.Object(res, "_meta"), "quota"), "token_count"); tc != nil {
		n.usage = &transcript.Usage{InputTokens: kit.Integer(tc, "input_tokens"), OutputTokens: kit.Integer(tc, "output_tokens")}
		n.turnInput = kit.Integer(tc, "input_tokens")
	}
	if u := kit.Object(res, "usage"); u != nil {
		cost := 0.0
		if n.usage != nil {
			cost = n.usage.CostUSD
		}
		n.usage = &transcript.Usage{InputTokens: kit.Integer(u, "inputTokens"), OutputTokens: kit.Integer(u, "outputTokens"),
			CacheReadTokens: kit.Integer(u, "cachedReadTokens"), CacheWriteTokens: kit.Integer(u, "cachedWriteTokens"), CostUSD: cost}
	}
}

// usageUpdate keeps the session's cost a usage_update reports (ACP's
// cumulative cost of the session), when it is in US dollars.
func (n *geminiACPNormalizer) usageUpdate(u map[string]json.RawMessage) {
	// used and size: how full the session's context is, of how much.
	if v := kit.Integer(u, "used"); v > 0 {
		n.used = v
	}
	if v := kit.Integer(u, "size"); v > 0 {
		n.size = v
	}
	c := kit.Object(u, "cost")
	if c == nil {
		return
	}
	if cur := kit.Str(c, "currency"); cur != "USD" {
		n.skip("usage costs in", cur)
		return
	}
	if n.usage == nil {
		n.usage = &transcript.Usage{}
	}
	n.usage.CostUSD = kit.Number(c, "amount")
}

// plan records the agent's plan as a thinking block, one entry a line.
func (n *geminiACPNormalizer) plan(u map[string]json.RawMessage) {
	var entries []map[string]json.RawMessage
	_ = json.Unmarshal(u["entries"], &entries) // not a list: an empty plan
	var b strings.Builder
	b.WriteString("Plan:")
	for _, e := range entries {
		fmt.Fprintf(&b, "\n- [%s] %s", kit.Str(e, "status"), kit.Str(e, "content"))
	}
	n.blocks = append(n.blocks, transcript.Block{Type: transcript.BlockThinking, Fidelity: transcript.Reconstructed, Text: b.String()})
}

func (n *geminiACPNormalizer) update(u map[string]json.RawMessage) {
	kind := kit.Str(u, "sessionUpdate")
	switch {
	case n.generic && kind == "user_message_chunk":
		n.skip("updates", kind)
		n.chunk = ""
		return
	case !n.generic && n.replaying(kind, u):
		n.replayed++
		n.chunk = ""
		return
	}
	switch kind {
	case "agent_message_chunk":
		if c := kit.Object(u, "content"); kit.Str(c, "type") == "text" {
			n.reply.WriteString(kit.Str(c, "text"))
		}
		n.text(transcript.BlockText, kit.Object(u, "content"))
		return
	case "agent_thought_chunk":
		n.text(transcript.BlockThinking, kit.Object(u, "content"))
		return
	case "tool_call":
		n.toolUse(u)
		if s := kit.Str(u, "status"); s == "completed" || s == "failed" {
			n.toolResult(u)
		}
	case "tool_call_update":
		switch kit.Str(u, "status") {
		case "completed", "failed":
			n.toolResult(u)
		}
	case "plan":
		if n.generic {
			n.plan(u)
		}
	case "usage_update":
		n.usageUpdate(u)
	case "current_mode_update", "available_commands_update", "session_info_update", "config_option_update":
	default:
		n.skip("updates", kind)
	}
	n.chunk = ""
}

// text appends a chunk of text or thinking to the block it continues.
func (n *geminiACPNormalizer) text(t transcript.BlockType, content map[string]json.RawMessage) {
	if kit.Str(content, "type") != "text" {
		n.skip("content blocks", kit.Str(content, "type"))
		n.chunk = ""
		return
	}
	s := kit.Str(content, "text")
	if n.chunk == t {
		n.blocks[len(n.blocks)-1].Text += s
		return
	}
	n.blocks = append(n.blocks, transcript.Block{Type: t, Fidelity: transcript.Native, Text: s})
	n.chunk = t
}

// toolUse records a tool call once: its name is the ACP tool kind (edit,
// execute, read…), its input what ACP says of the call (title, locations,
// and rawInput when the CLI sends it).
func (n *geminiACPNormalizer) toolUse(tc map[string]json.RawMessage) {
	id := kit.Str(tc, "toolCallId")
	if n.tools[id] {
		return
	}
	if n.tools == nil {
		n.tools = map[string]bool{}
	}
	n.tools[id] = true
	input := map[string]json.RawMessage{}
	for _, k := range []string{"title", "locations", "rawInput"} {
		if v, ok := tc[k]; ok {
			input[k] = v
		}
	}
	name := kit.Str(tc, "kind")
	if name == "" {
		name = "other"
	}
	n.blocks = append(n.blocks, transcript.Block{Type: transcript.BlockToolUse, Fidelity: transcript.Reconstructed, ID: id, Name: name, Input: kit.RawObject(kit.MustJSON(input))})
}

// toolResult records the end of a tool call: its content as text (text
// items as they are, a diff as the new text of its path, others as JSON).
func (n *geminiACPNormalizer) toolResult(u map[string]json.RawMessage) {
	id := kit.Str(u, "toolCallId")
	if !n.tools[id] {
		n.toolUse(u)
	}
	if n.results == nil {
		n.results = map[string]bool{}
	}
	n.results[id] = true
	var items []map[string]json.RawMessage
	_ = json.Unmarshal(u["content"], &items) // not a list: no content
	texts := make([]string, 0, len(items))
	for _, it := range items {
		switch kit.Str(it, "type") {
		case "content":
			texts = append(texts, kit.Str(kit.Object(it, "content"), "text"))
		case "diff":
			texts = append(texts, "diff "+kit.Str(it, "path")+":\n"+kit.Str(it, "newText"))
		default:
			texts = append(texts, string(kit.MustJSON(it)))
		}
	}
	n.blocks = append(n.blocks, transcript.Block{Type: transcript.BlockToolResult, Fidelity: transcript.Reconstructed, ToolUseID: id,
		Content: strings.Join(texts, "\n"), IsError: kit.Str(u, "status") == "failed"})
}

func (n *geminiACPNormalizer) skip(what, kind string) {
	if n.skipped == nil {
		n.skipped = map[string]int{}
	}
	n.skipped[what+" "+kind]++
}

func (n *geminiACPNormalizer) Final() []transcript.Block {
	if n.chunk != "" {
		return n.blocks[:len(n.blocks)-1]
	}
	return n.blocks
}

func (n *geminiACPNormalizer) Finish() kit.Decoded {
	notes := n.notes
	if n.replayed > 0 {
		notes = append(notes, fmt.Sprintf("left out %d updates replaying the loaded session's history", n.replayed))
	}
	if n.lateReplay > 0 {
		notes = append(notes, fmt.Sprintf("%d of them came after the prompt was sent (the replay was still going on)", n.lateReplay))
	}
	if n.lateAfterLive > 0 {
		notes = append(notes, fmt.Sprintf("%d of them came after the reply had begun: the replay and the reply were mixed, and the reply may lack parts or hold parts of the history", n.lateAfterLive))
	}

	unanswered := 0
	for id := range n.tools {
		if !n.results[id] {
			unanswered++
		}
	}
	if unanswered > 0 {
		notes = append(notes, fmt.Sprintf("%d tool calls have no result: refused, or the run was cut short", unanswered))
	}
	label := n.agent + " ACP messages"
	if n.generic {
		label = "ACP messages"
	}
	notes = append(notes, kit.NoteCounts(label, n.skipped)...)
	if !n.answered {
		notes = append(notes, "no response to the "+n.agent+" prompt: the run was cut short")
	}
	context := n.used
	if context == 0 {
		context = n.turnInput
	}
	return kit.Decoded{
		Message: transcript.AssistantMessage{Blocks: n.blocks, Notes: notes},
		Reply:   n.reply.String(), Handle: n.handle, Usage: n.usage, Failure: n.failure, Ended: n.answered,
		ContextTokens: context, ContextWindow: n.size, SetAside: n.lateReplay,
	}
}

// Count implements kit.SizeCounter: the size of the line read next (see
// replayFits).
func (n *geminiACPNormalizer) Count(size int) { n.bytes += size }
