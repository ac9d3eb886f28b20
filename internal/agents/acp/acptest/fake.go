package acptest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
)

// Fake is a generic ACP agent (Agent Client Protocol version 1, JSON-RPC
// 2.0 lines on standard input and output), for knotd's protocol: acp
// commands. It follows the protocol as written rather than one CLI: it
// offers session/load and session/resume (a loaded session's history is
// replayed before the load's response), answers a prompt with a thought,
// a plan, a tool call and its result, a usage_update with a cost, the
// reply in two agent_message_chunk updates, and the response with
// stopReason end_turn and the turn's usage (100×turns in, 20 out). It
// appends every message it receives, one a line, to <state>/acp.jsonl,
// exits 0 when its input ends, and records its call, whose Stdin is the
// prompt's text. It accepts any session/set_mode.
//
// fakekit.EnvFail: "load" offers session/load only, "fresh" neither load nor
// resume; "permission" asks permission for an edit tool call before
// replying and ends the reply with "[permission: <optionId or
// cancelled>]"; "fs" reads line 1 of <cwd>/in.md and writes <cwd>/out.md through
// the client and ends the reply with "[read: …] [write: …]" (the content
// read or the error); "fsedit" reads <cwd>/side.txt through the client
// ("fsblind": from the disk itself, as an agent with its own read tool),
// creates <gate>.read (EnvGate), waits for the gate, then writes what it
// read and "agent line" through the client, ending the reply with
// "[write: ok or the error]"; "permedit" creates <gate>.read, waits for
// the gate, then asks permission to edit <cwd>/side.txt (the tool call's
// locations and a diff from its text to its text and "agent line", as
// OpenCode does) and, when allowed, writes that itself, as agents with
// their own write tools do, ending the reply with "[permission: …]"
// ("permeditnopath": the same request naming no file, as ACP allows);
// "ask" (for permissions ask) says "I will write ask.txt." and asks
// permission to create <cwd>/ask.txt (toolCallId "ask-write-<turn>", kind
// edit, its locations and a diff from nothing to "approved text\n", no
// rawInput), writes it through the client (fs/write_text_file) when
// allowed, then says "I will run a command." and asks permission to run
// "touch ran.txt" (toolCallId "ask-run-<turn>", kind execute, rawInput
// {"command": "touch ran.txt"}), ending the reply with "[write: <optionId,
// cancelled, or the write's error>] [command: <optionId or cancelled>]"
// (it runs nothing itself); "askend" asks the same for the write and,
// refused, ends the turn with stopReason cancelled, as Codex's adapter
// does;
// "gate" stops after its first chunk until the file
// EnvGate names exists; "cancel" waits for session/cancel after the
// prompt, then answers stopReason cancelled; "error" answers the prompt
// with an error, "auth" with ACP's authentication required; "refusal" ends the turn with stopReason refusal; "crash"
// exits 1, with an error on standard error, when asked for a session;
// "flood" streams 20,000 thought chunks before its reply; "notacp" prints
// a usage line and exits 0 at once, as a command that is no ACP agent.
func Fake(inv *fakekit.Invocation) int {
	mode := fakekit.FailMode()
	if mode == "notacp" { // a command that is not an ACP agent
		fmt.Fprintln(inv.Stdout, "Usage: agent [COMMAND]")
		return 0
	}
	conv, err := inv.Conversations("acp", false)
	if err != nil {
		return inv.Die(err)
	}
	log, err := os.OpenFile(filepath.Join(inv.State, "acp.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return inv.Die(err)
	}
	defer log.Close()
	c := fakekit.NewACPConn(inv, log)
	update, text, call := c.Update, fakekit.ACPText, c.Call
	received := ""
	for {
		m, ok, _ := c.Read()
		if !ok {
			break
		}
		id := m.ID
		s := m.Params.SessionID
		switch m.Method {
		case "initialize":
			caps := map[string]any{"loadSession": mode != "fresh"}
			if mode != "load" && mode != "fresh" {
				caps["sessionCapabilities"] = map[string]any{"resume": map[string]any{}}
			}
			c.Send(map[string]any{"id": id, "result": map[string]any{"protocolVersion": 1, "agentCapabilities": caps,
				"agentInfo": map[string]any{"name": "fake-acp", "version": "0.0.1"}}})
		case "session/new":
			if mode == "crash" {
				fmt.Fprintln(inv.Stderr, "fatal: the agent's store is corrupt")
				return 1
			}
			s := fakekit.NewID()
			if _, err := conv.Bump(s); err != nil {
				return inv.Die(err)
			}
			c.Send(map[string]any{"id": id, "result": map[string]any{"sessionId": s}})
		case "session/load", "session/resume":
			turns := conv.Turns(s) - 1
			if turns < 1 {
				c.Send(map[string]any{"id": id, "error": map[string]any{"code": -32002, "message": "Resource not found: session " + s}})
				continue
			}
			if m.Method == "session/load" {
				for k := 1; k <= turns; k++ {
					update(s, text("user_message_chunk", "prompt "+strconv.Itoa(k)))
					update(s, text("agent_message_chunk", fakekit.Reply(k)))
				}
			}
			c.Send(map[string]any{"id": id, "result": map[string]any{}})
		case "session/set_mode":
			c.Send(map[string]any{"id": id, "result": map[string]any{}})
		case "session/prompt":
			received += m.PromptText()
			switch mode {
			case "error":
				c.Send(map[string]any{"id": id, "error": map[string]any{"code": -32603, "message": "Internal error",
					"data": map[string]any{"details": "the model is overloaded"}}})
				continue
			case "auth":
				c.Send(map[string]any{"id": id, "error": map[string]any{"code": -32000, "message": "Authentication required"}})
				continue
			case "refusal":
				c.Send(map[string]any{"id": id, "result": map[string]any{"stopReason": "refusal"}})
				continue
			case "cancel":
				update(s, text("agent_message_chunk", "working…"))
				for {
					m, ok, _ := c.Read()
					if !ok {
						return inv.Die(fmt.Errorf("input ended before session/cancel"))
					}
					if m.Method == "session/cancel" {
						break
					}
				}
				c.Send(map[string]any{"id": id, "result": map[string]any{"stopReason": "cancelled"}})
				continue
			}
			suffix := ""
			switch mode {
			case "permission":
				choice, err := c.AskPermission(s, []any{
					map[string]any{"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
					map[string]any{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
					map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
				}, map[string]any{"toolCallId": "edit-1", "status": "pending", "title": "Edit out.md", "kind": "edit"})
				if err != nil {
					return inv.Die(err)
				}
				suffix = " [permission: " + choice + "]"
			case "permedit", "permeditnopath":
				// Ask to edit <cwd>/side.txt once the gate opens, then
				// write it with an own tool when allowed ("permeditnopath":
				// a request that names no file, as ACP allows).
				side := filepath.Join(inv.Dir, "side.txt")
				gate := os.Getenv(fakekit.EnvGate)
				if err := os.WriteFile(gate+".read", nil, 0o600); err != nil {
					return inv.Die(err)
				}
				if err := fakekit.WaitFor(gate); err != nil {
					return inv.Die(err)
				}
				b, err := os.ReadFile(side)
				if err != nil {
					return inv.Die(err)
				}
				edited := string(b) + "agent line\n"
				toolCall := map[string]any{"toolCallId": "edit-side", "status": "pending", "title": side, "kind": "edit",
					"locations": []any{map[string]any{"path": side}},
					"content":   []any{map[string]any{"type": "diff", "path": side, "oldText": string(b), "newText": edited}}}
				if mode == "permeditnopath" {
					toolCall = map[string]any{"toolCallId": "edit-side", "status": "pending", "title": "Edit a file", "kind": "edit"}
				}
				choice, err := c.AskPermission(s, []any{
					map[string]any{"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
					map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
				}, toolCall)
				if err != nil {
					return inv.Die(err)
				}
				if choice == "allow" {
					if err := os.WriteFile(side, []byte(edited), 0o644); err != nil {
						return inv.Die(err)
					}
				}
				suffix = " [permission: " + choice + "]"
			case "ask", "askend":
				turn := strconv.Itoa(conv.Turns(s))
				update(s, text("agent_message_chunk", "I will write ask.txt."))
				target := filepath.Join(inv.Dir, "ask.txt")
				choice, err := c.AskPermission(s, []any{
					map[string]any{"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
					map[string]any{"optionId": "allow-always", "name": "Always allow", "kind": "allow_always"},
					map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
				}, map[string]any{"toolCallId": "ask-write-" + turn, "status": "pending", "title": "Write ask.txt", "kind": "edit",
					"locations": []any{map[string]any{"path": target}},
					"content":   []any{map[string]any{"type": "diff", "path": target, "newText": "approved text\n"}}})
				if err != nil {
					return inv.Die(err)
				}
				if choice == "allow" {
					if _, werr := call("fs/write_text_file", map[string]any{"sessionId": s, "path": target, "content": "approved text\n"}); werr != "" {
						choice = "write failed: " + werr
					}
				}
				suffix = " [write: " + choice + "]"
				if mode == "askend" {
					if choice != "allow" {
						c.Send(map[string]any{"id": id, "result": map[string]any{"stopReason": "cancelled"}})
						continue
					}
					break
				}
				update(s, text("agent_message_chunk", " I will run a command."))
				choice, err = c.AskPermission(s, []any{
					map[string]any{"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
					map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
				}, map[string]any{"toolCallId": "ask-run-" + turn, "status": "pending", "title": "touch ran.txt", "kind": "execute",
					"rawInput": map[string]any{"command": "touch ran.txt"}})
				if err != nil {
					return inv.Die(err)
				}
				suffix += " [command: " + choice + "]"
			case "fs":
				res, errMsg := call("fs/read_text_file", map[string]any{"sessionId": s, "path": filepath.Join(inv.Dir, "in.md"), "line": 1, "limit": 1})
				var r struct{ Content string }
				_ = json.Unmarshal(res, &r)
				if errMsg != "" {
					r.Content = "error: " + errMsg
				}
				_, werr := call("fs/write_text_file", map[string]any{"sessionId": s, "path": filepath.Join(inv.Dir, "out.md"), "content": "written by the agent\n"})
				if werr == "" {
					werr = "ok"
				}
				suffix = " [read: " + r.Content + "] [write: " + werr + "]"
			case "fsedit", "fsblind":
				// Edit <cwd>/side.txt: read it (through the client, or
				// from the disk itself as agents with their own read
				// tools do), say so by creating <gate>.read, wait for
				// the gate, then write what was read and a line of its
				// own through the client.
				side := filepath.Join(inv.Dir, "side.txt")
				var content, errMsg string
				if mode == "fsedit" {
					var res json.RawMessage
					res, errMsg = call("fs/read_text_file", map[string]any{"sessionId": s, "path": side})
					var r struct{ Content string }
					_ = json.Unmarshal(res, &r)
					content = r.Content
				} else if b, err := os.ReadFile(side); err != nil {
					errMsg = err.Error()
				} else {
					content = string(b)
				}
				if errMsg != "" {
					return inv.Die(fmt.Errorf("read %s: %s", side, errMsg))
				}
				gate := os.Getenv(fakekit.EnvGate)
				if err := os.WriteFile(gate+".read", nil, 0o600); err != nil {
					return inv.Die(err)
				}
				if err := fakekit.WaitFor(gate); err != nil {
					return inv.Die(err)
				}
				_, werr := call("fs/write_text_file", map[string]any{"sessionId": s, "path": side, "content": content + "agent line\n"})
				if werr == "" {
					werr = "ok"
				}
				suffix = " [write: " + werr + "]"
			}
			n, err := conv.Bump(s)
			if err != nil {
				return inv.Die(err)
			}
			n--
			r := fakekit.Reply(n) + suffix
			update(s, text("agent_thought_chunk", "Thinking about the note."))
			update(s, map[string]any{"sessionUpdate": "plan", "entries": []any{
				map[string]any{"content": "Read the note", "priority": "high", "status": "completed"},
				map[string]any{"content": "Answer", "priority": "medium", "status": "in_progress"},
			}})
			update(s, map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call-1", "title": "Read note.md", "kind": "read", "status": "pending"})
			update(s, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed",
				"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "the note's text"}}}})
			update(s, map[string]any{"sessionUpdate": "usage_update", "used": 1000, "size": 200000, "cost": map[string]any{"amount": 0.25, "currency": "USD"}})
			if mode == "flood" { // many small chunks at once, as a fast model streams
				for range 20000 {
					update(s, text("agent_thought_chunk", "token "))
				}
			}
			update(s, text("agent_message_chunk", r[:len(r)/2]))
			if mode == "gate" {
				// A block after the chunk makes the chunk final.
				update(s, map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call-2", "title": "Wait", "kind": "other", "status": "completed"})
				if err := fakekit.WaitFor(os.Getenv(fakekit.EnvGate)); err != nil {
					return inv.Die(err)
				}
			}
			update(s, text("agent_message_chunk", r[len(r)/2:]))
			c.Send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn",
				"usage": map[string]any{"inputTokens": 100 * n, "outputTokens": 20, "totalTokens": 100*n + 20}}})
		default:
			c.Unknown(m)
		}
	}
	if err := c.Finish(received); err != nil {
		return inv.Die(err)
	}
	return 0
}
