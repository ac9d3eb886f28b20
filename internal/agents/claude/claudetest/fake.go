package claudetest

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
)

// EnvFakeContext sets how many tokens the Claude fake's context grows by
// each turn of a conversation (default 1000): its assistant message's
// usage says the context holds turns×that many, split as Claude Code
// splits it between input, cache reads and cache writes.
const EnvFakeContext = "KNOTD_FAKEAGENT_CONTEXT"

// Fake imitates `claude -p --output-format json|stream-json|text` of
// Claude Code 2.1.330, including its exact session error messages. Its
// stream-json has the recorded shape: a system init line, an assistant
// message with a thinking and a text block, and the result line. A prompt
// can make its model ask for a tool call, which a PreToolUse hook given
// with --settings can allow, deny or defer (see FakeTool).
func Fake(inv *fakekit.Invocation) int {
	f, err := fakekit.ParseFlags(inv.Args, []string{"--output-format", "--session-id", "--resume", "--model", "--append-system-prompt",
		"--permission-mode", "--permission-prompts", "--setting-sources", "--settings"},
		[]string{"-p", "--print", "--verbose"})
	if err == nil {
		err = f.OneOf("--permission-mode", "acceptEdits", "auto", "bypassPermissions", "default", "manual", "dontAsk", "plan")
	}
	if err == nil {
		err = f.OneOf("--permission-prompts", "host", "none")
	}
	if err == nil {
		err = f.OneOf("--setting-sources", "user", "project", "local", "user,project", "user,project,local")
	}
	if err != nil || len(f.Rest) > 0 || !(f.Bools["-p"] || f.Bools["--print"]) {
		fmt.Fprintf(inv.Stderr, "error: %v (args %q)\n", err, inv.Args)
		return 1
	}
	prompt, err := inv.Record()
	if err != nil {
		return inv.Die(err)
	}
	conv, err := inv.Conversations("claude", true)
	if err != nil {
		return inv.Die(err)
	}
	id := f.Values["--session-id"]
	switch resume := f.Values["--resume"]; {
	case resume != "":
		if conv.Turns(resume) == 0 {
			fmt.Fprintf(inv.Stderr, "No conversation found with session ID: %s\n", resume)
			return 1
		}
		id = resume
	case id != "":
		if !fakekit.UUIDRE.MatchString(id) {
			fmt.Fprintln(inv.Stderr, "Error: Invalid session ID. Must be a valid UUID.")
			return 1
		}
		if conv.Turns(id) > 0 {
			fmt.Fprintf(inv.Stderr, "Error: Session ID %s is already in use.\n", id)
			return 1
		}
	default:
		id = fakekit.NewID()
	}
	stream := f.Values["--output-format"] == "stream-json"
	if stream {
		if !f.Bools["--verbose"] {
			fmt.Fprintln(inv.Stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
			return 1
		}
		fakekit.EmitJSON(inv, map[string]any{"type": "system", "subtype": "init", "cwd": ".", "session_id": id, "tools": []string{"Read", "Edit"}})
	}
	if fakekit.FailMode() == "error" {
		fakekit.EmitJSON(inv, map[string]any{"type": "result", "subtype": "success", "is_error": true,
			"result":     "API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
			"session_id": id, "total_cost_usd": 0, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0}})
		return 1
	}
	// A turn whose model asks for a tool call (FakeTool), or one that
	// resumes a deferred call.
	var call fakeCall
	resumed, asks := false, false
	if f.Values["--resume"] != "" && strings.TrimSpace(prompt) == "" {
		if call, resumed, err = deferredCall(conv, id); err != nil {
			return inv.Die(err)
		}
		if !resumed {
			fmt.Fprintln(inv.Stderr, noDeferredCall)
			return 1
		}
	} else if call, asks, err = toolCallIn(prompt, inv.Dir); err != nil {
		return inv.Die(err)
	}
	n := conv.Turns(id)
	if !resumed {
		if n, err = conv.Bump(id); err != nil {
			return inv.Die(err)
		}
	}
	reply := fakekit.Reply(n)
	if asks || resumed {
		if asks && stream {
			fakekit.EmitJSON(inv, map[string]any{"type": "assistant", "session_id": id, "message": map[string]any{
				"id": "msg_0", "type": "message", "role": "assistant", "content": []any{
					map[string]any{"type": "text", "text": call.Why},
					map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": call.Input},
				}}})
		}
		result, isError, deferred, err := toolTurn(inv, conv, f.Values["--settings"], f.Values["--permission-mode"], id, call)
		if err != nil {
			return inv.Die(err)
		}
		if deferred {
			fakekit.EmitJSON(inv, map[string]any{
				"type": "result", "subtype": "success", "is_error": false, "duration_ms": 128, "num_turns": 1,
				"result": "", "session_id": id, "total_cost_usd": 0.0002 * float64(n), "stop_reason": "tool_deferred",
				"terminal_reason": "tool_deferred", "deferred_tool_use": map[string]any{"id": call.ID, "name": call.Name, "input": call.Input},
				"usage": map[string]any{"input_tokens": 10 * n, "output_tokens": 8, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
			})
			return 0
		}
		if stream {
			fakekit.EmitJSON(inv, map[string]any{"type": "user", "session_id": id, "message": map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": call.ID, "content": result, "is_error": isError},
			}}})
		}
		reply = "FAKE TOOL RESULT: " + result
	}
	if format := f.Values["--output-format"]; format != "json" && !stream {
		fmt.Fprintln(inv.Stdout, reply)
		return 0
	}
	if pad, _ := strconv.Atoi(os.Getenv(fakekit.EnvPad)); stream && pad > 0 {
		// A tool's long output, before the reply.
		fakekit.EmitJSON(inv, map[string]any{"type": "user", "session_id": id, "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": strings.Repeat("x", pad)},
		}}})
	}
	if stream {
		perTurn := 1000
		if v, err := strconv.Atoi(os.Getenv(EnvFakeContext)); err == nil && v > 0 {
			perTurn = v
		}
		ctx := perTurn * n
		fakekit.EmitJSON(inv, map[string]any{"type": "assistant", "session_id": id, "message": map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": "Reading the note."},
				map[string]any{"type": "text", "text": reply},
			},
			"usage": map[string]any{"input_tokens": 3, "cache_creation_input_tokens": ctx / 4, "cache_read_input_tokens": ctx - 3 - ctx/4, "output_tokens": 8},
		}})
		if gate := os.Getenv(fakekit.EnvGate); gate != "" {
			if err := fakekit.WaitFor(gate); err != nil {
				return inv.Die(err)
			}
		}
	}
	// total_cost_usd is the session's running total, as Claude Code
	// reports it on resume.
	fakekit.EmitJSON(inv, map[string]any{
		"type": "result", "subtype": "success", "is_error": false, "duration_ms": 256, "num_turns": 1,
		"result": reply, "session_id": id, "total_cost_usd": 0.0002 * float64(n), "stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": 10 * n, "output_tokens": 8, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
	})
	return 0
}
