package codex

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/transcript"
)

// FormatJSON is `codex exec --json`: thread, turn and item events, as
// written in transcripts.
const FormatJSON transcript.Format = "codex-json"

// Formats are the output formats this package reads.
var Formats = []kit.Decoding{{Format: FormatJSON, New: func() kit.Normalizer { return &codexNormalizer{} }}}

// codexNormalizer reads `codex exec --json` (codex-rs/exec/src/exec_events.rs
// of openai/codex): thread.started, turn.started, turn.completed (usage),
// turn.failed and error events, and item.started, item.updated and
// item.completed events carrying a thread item with an "id" and a "type":
// agent_message and reasoning (text), command_execution, file_change,
// mcp_tool_call, web_search, todo_list, plan and error. Each item becomes
// blocks from its last state once it completed, in the order items
// complete (so each is final at once, and a to-do list updated all turn
// long comes where it was done); items that never completed follow, in
// the order they first appeared: messages and reasoning natively,
// tool-like items reconstructed as a tool_use followed by a tool_result
// once the item finished. The thread id of "thread.started" is the resume
// handle, the last completed agent_message the reply, and a turn.failed or
// error event (cleared by a later turn.completed) the failure.
type codexNormalizer struct {
	order   []string
	items   map[string]map[string]json.RawMessage
	done    map[string]bool // items converted to blocks
	anon    int
	usage   *transcript.Usage
	notes   []string
	skipped map[string]int
	started bool // a turn started
	ended   bool // and ended (completed or failed)
	thread  string
	reply   string
	failure string
	// finalBlocks holds the blocks of the items that completed.
	finalBlocks []transcript.Block
}

func (n *codexNormalizer) Event(obj map[string]json.RawMessage) {
	switch t := kit.Str(obj, "type"); t {
	case "item.started", "item.updated", "item.completed":
		item := kit.Object(obj, "item")
		if item == nil {
			return
		}
		id := kit.Str(item, "id")
		if id == "" {
			n.anon++
			id = fmt.Sprintf("\x00%d", n.anon) // never equal to a real id
		}
		if n.items == nil {
			n.items = map[string]map[string]json.RawMessage{}
		}
		if _, seen := n.items[id]; !seen {
			n.order = append(n.order, id)
		}
		n.items[id] = item
		if t == "item.completed" && !n.done[id] {
			if n.done == nil {
				n.done = map[string]bool{}
			}
			n.done[id] = true
			if kit.Str(item, "type") == "agent_message" {
				n.reply = kit.Str(item, "text")
			}
			n.finalBlocks = append(n.finalBlocks, n.itemBlocks(id)...)
		}
	case "turn.started":
		n.started = true
	case "turn.completed":
		n.ended = true
		n.failure = ""
		if u := kit.Object(obj, "usage"); u != nil {
			if n.usage == nil {
				n.usage = &transcript.Usage{}
			}
			n.usage.Add(transcript.Usage{InputTokens: kit.Integer(u, "input_tokens"), CacheReadTokens: kit.Integer(u, "cached_input_tokens"),
				CacheWriteTokens: kit.Integer(u, "cache_write_input_tokens"), OutputTokens: kit.Integer(u, "output_tokens")})
		}
	case "turn.failed":
		n.ended = true
		msg := kit.Str(kit.Object(obj, "error"), "message")
		n.notes = append(n.notes, "codex turn failed: "+msg)
		n.failure = cmp.Or(msg, "turn failed")
	case "error":
		msg := kit.Str(obj, "message")
		n.notes = append(n.notes, "codex error: "+msg)
		n.failure = cmp.Or(msg, "error")
	case "thread.started":
		n.thread = kit.Str(obj, "thread_id")
	case "item.plan.delta":
		// Plan deltas are followed by the whole plan item.
	default:
		if n.skipped == nil {
			n.skipped = map[string]int{}
		}
		n.skipped[t]++
	}
}

// itemBlocks converts item id in its last state.
func (n *codexNormalizer) itemBlocks(id string) []transcript.Block {
	item := n.items[id]
	if strings.HasPrefix(id, "\x00") {
		id = ""
	}
	return n.blocks(id, item)
}

func (n *codexNormalizer) Final() []transcript.Block { return n.finalBlocks }

func (n *codexNormalizer) Finish() kit.Decoded {
	out := kit.Decoded{Reply: n.reply, Handle: n.thread, Usage: n.usage, Failure: n.failure, Ended: n.ended}
	msg := &out.Message
	msg.Blocks = n.finalBlocks
	for _, id := range n.order {
		if !n.done[id] {
			msg.Blocks = append(msg.Blocks, n.itemBlocks(id)...)
		}
	}
	msg.Notes = append(n.notes, kit.NoteCounts("codex events", n.skipped)...)
	if n.started && !n.ended {
		msg.Notes = append(msg.Notes, "the codex turn did not end: the run was cut short")
	}
	return out
}

// blocks converts one thread item in its last state.
func (n *codexNormalizer) blocks(id string, item map[string]json.RawMessage) []transcript.Block {
	status := kit.Str(item, "status")
	done := status != "" && status != "in_progress"
	failed := status == "failed" || status == "declined"
	use := func(name string, input any) transcript.Block {
		return transcript.Block{Type: transcript.BlockToolUse, Fidelity: transcript.Reconstructed, ID: id, Name: name, Input: kit.MustJSON(input)}
	}
	result := func(content string, isErr bool) transcript.Block {
		return transcript.Block{Type: transcript.BlockToolResult, Fidelity: transcript.Reconstructed, ToolUseID: id, Content: content, IsError: isErr}
	}
	switch t := kit.Str(item, "type"); t {
	case "agent_message", "plan":
		return []transcript.Block{{Type: transcript.BlockText, Fidelity: transcript.Native, Text: kit.Str(item, "text")}}
	case "reasoning":
		return []transcript.Block{{Type: transcript.BlockThinking, Fidelity: transcript.Native, Text: kit.Str(item, "text")}}
	case "command_execution":
		out := []transcript.Block{use("command_execution", map[string]string{"command": kit.Str(item, "command")})}
		var exit *int
		if raw, ok := item["exit_code"]; ok {
			_ = json.Unmarshal(raw, &exit) // null or absent: still running
		}
		if done || exit != nil {
			content := kit.Str(item, "aggregated_output")
			if content == "" && status == "declined" {
				content = "declined"
			}
			out = append(out, result(content, failed || exit != nil && *exit != 0))
		}
		return out
	case "file_change":
		var changes []map[string]string
		_ = json.Unmarshal(item["changes"], &changes) // other shapes: none
		out := []transcript.Block{use("file_change", map[string]any{"changes": changes})}
		if done {
			lines := make([]string, 0, len(changes))
			for _, c := range changes {
				lines = append(lines, c["kind"]+" "+c["path"])
			}
			out = append(out, result(status+": "+strings.Join(lines, ", "), failed))
		}
		return out
	case "mcp_tool_call":
		b := use(kit.Str(item, "server")+"/"+kit.Str(item, "tool"), nil)
		b.Input = kit.RawObject(item["arguments"])
		out := []transcript.Block{b}
		if done {
			content, _ := kit.Flatten(kit.Object(item, "result")["content"])
			if e := kit.Object(item, "error"); e != nil {
				content = kit.Str(e, "message")
			}
			out = append(out, result(content, failed))
		}
		return out
	case "web_search":
		return []transcript.Block{use("web_search", map[string]string{"query": kit.Str(item, "query")})}
	case "todo_list":
		var items []map[string]any
		_ = json.Unmarshal(item["items"], &items) // other shapes: none
		return []transcript.Block{use("todo_list", map[string]any{"items": items})}
	case "error":
		n.notes = append(n.notes, "codex error item: "+kit.Str(item, "message"))
		return nil
	default:
		// An item type this version does not know (collab_tool_call…):
		// keep its fields as the input of a tool_use named after it.
		fields := make(map[string]json.RawMessage, len(item))
		for k, v := range item {
			if k != "id" && k != "type" {
				fields[k] = v
			}
		}
		out := []transcript.Block{use(t, fields)}
		if done {
			out = append(out, result(status, failed))
		}
		return out
	}
}
