package geminitest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
)

// Fake imitates `gemini --acp [--approval-mode M] [--model M]` of Gemini
// CLI 0.61.0: JSON-RPC 2.0 lines on standard input and output, as recorded
// in agents/gemini/testdata/recorded-acp/acp-*. It answers initialize,
// session/new (a fresh session id), session/load (the history replayed as
// session/update notifications, the first before the response and the
// rest after it, then available_commands_update; an error for a session it
// does not have) and session/prompt (the reply in two agent_message_chunk
// updates, then the response with the turn's tokens in _meta.quota). As
// Gemini CLI does, session/load finds the session by the id trimmed, and
// the loaded session is then known by the id as given: a prompt must name
// a session by the id session/new returned or session/load was given. It
// exits 0 when its input ends, and then records its call, whose Stdin is
// the prompt's text ("" when none came).
//
// KNOTD_FAKEAGENT_FAIL: "error" answers a prompt with the error Gemini CLI
// sends for an API error; "untrusted" writes Gemini CLI's notes about an
// untrusted folder to standard error and carries on ("untrustedempty":
// and its reply is empty); "permission" asks
// permission for an edit tool call before replying, and the reply ends
// with "[permission: <the chosen optionId, or cancelled>]"; "crash" exits 1
// with an error on standard error when asked for a session; "flood" prints
// 4 MiB of thought chunks after a new session's response, before it reads
// on; "linger" does not exit when its input ends; "hang" blocks;
// "midreplay" replays a loaded session's history as Gemini CLI does once it
// outgrows the pipe: the first update (a context of 84 KiB), the load's
// response, the first prompt, available_commands_update, and the rest of
// the replay only once the prompt came (before the reply).
func Fake(inv *fakekit.Invocation) int {
	f, err := fakekit.ParseFlags(inv.Args, []string{"--approval-mode", "--model", "-m"}, []string{"--acp"})
	if err != nil || len(f.Rest) > 0 || !f.Bools["--acp"] {
		fmt.Fprintf(inv.Stderr, "Unknown arguments: %q (%v)\n", inv.Args, err)
		return 42
	}
	mode := fakekit.FailMode()
	if mode == "untrusted" || mode == "untrustedempty" {
		fmt.Fprint(inv.Stderr, "Skipping project agents due to untrusted folder. To enable, ensure that the project root is trusted.\n"+
			"Project hooks disabled because the folder is not trusted.\n")
	}
	conv, err := inv.Conversations("gemini", true)
	if err != nil {
		return inv.Die(err)
	}
	c := fakekit.NewACPConn(inv, nil)
	update, text := c.Update, fakekit.ACPText
	commands := map[string]any{"sessionUpdate": "available_commands_update", "availableCommands": []any{}}
	received := ""            // the prompt's text, for the call recorded at the end
	var late []map[string]any // the replay's updates held for the prompt (midreplay)
	// known maps the ids prompts may name to the conversation's id.
	known := map[string]string{}
	for {
		m, ok, err := c.Read()
		if !ok {
			break
		}
		if err != nil {
			continue
		}
		id := m.ID
		switch m.Method {
		case "initialize":
			c.Send(map[string]any{"id": id, "result": map[string]any{"protocolVersion": 1,
				"agentCapabilities": map[string]any{"loadSession": true}}})
		case "session/new":
			if mode == "crash" {
				fmt.Fprintln(inv.Stderr, "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory")
				return 1
			}
			s := fakekit.NewID()
			if _, err := conv.Bump(s); err != nil { // turn 0 is 1 here: a prompt makes it 2
				return inv.Die(err)
			}
			known[s] = s
			c.Send(map[string]any{"id": id, "result": map[string]any{"sessionId": s, "modes": map[string]any{"currentModeId": "default"}}})
			if mode == "flood" { // 4 MiB of output before reading on
				pad := strings.Repeat("x", 64<<10)
				for range 64 {
					update(s, text("agent_thought_chunk", pad))
				}
			}
			update(s, commands)
		case "session/load":
			s := m.Params.SessionID
			turns := conv.Turns(strings.TrimSpace(s)) - 1
			if turns < 1 {
				c.Send(map[string]any{"id": id, "error": map[string]any{"code": -32603, "message": "Internal error",
					"data": map[string]any{"details": "No previous sessions found for this project."}}})
				continue
			}
			known[s] = strings.TrimSpace(s)
			context := "<session_context>\nThis is the fake Gemini CLI."
			if mode == "midreplay" { // a history longer than the pipe holds
				context += strings.Repeat("\nThe context goes on.", 4<<10)
			}
			update(s, text("user_message_chunk", context))
			c.Send(map[string]any{"id": id, "result": map[string]any{"modes": map[string]any{"currentModeId": "default"}}})
			var replay []map[string]any
			for k := 1; k <= turns; k++ {
				replay = append(replay, text("user_message_chunk", "prompt "+strconv.Itoa(k)), text("agent_message_chunk", fakekit.Reply(k)))
			}
			if mode == "midreplay" {
				replay, late = replay[:1], replay[1:]
			}
			for _, u := range replay {
				update(s, u)
			}
			update(s, commands)
		case "session/prompt":
			s := m.Params.SessionID
			key, ok := known[s]
			if !ok {
				c.Send(map[string]any{"id": id, "error": map[string]any{"code": -32602, "message": "Session not found: " + s}})
				continue
			}
			for _, u := range late {
				update(s, u)
			}
			late = nil
			received = m.PromptText()
			if mode == "error" {
				c.Send(map[string]any{"id": id, "error": map[string]any{"code": 401,
					"message": `{"error":{"code":401,"message":"API key not valid. Please pass a valid API key.","status":"UNAUTHENTICATED"}}`}})
				continue
			}
			suffix := ""
			if mode == "permission" {
				choice, err := c.AskPermission(s, []any{
					map[string]any{"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
					map[string]any{"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
					map[string]any{"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
				}, map[string]any{"toolCallId": "write_file-1", "status": "pending", "title": "Writing to notes/out.md", "kind": "edit"})
				if err != nil {
					return inv.Die(err)
				}
				suffix = " [permission: " + choice + "]"
			}
			n, err := conv.Bump(key)
			if err != nil {
				return inv.Die(err)
			}
			n--
			r := fakekit.Reply(n) + suffix
			if mode == "untrustedempty" {
				r = ""
			}
			update(s, text("agent_message_chunk", r[:len(r)/2]))
			update(s, text("agent_message_chunk", r[len(r)/2:]))
			c.Send(map[string]any{"id": id, "result": map[string]any{"stopReason": "end_turn",
				"_meta": map[string]any{"quota": map[string]any{"token_count": map[string]any{"input_tokens": 100 * n, "output_tokens": 20}}}}})
		default:
			c.Unknown(m)
		}
	}
	if err := c.Finish(received); err != nil {
		return inv.Die(err)
	}
	if mode == "linger" {
		fakekit.SleepForever()
	}
	return 0
}
