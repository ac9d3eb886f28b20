package fakeagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// claude imitates `claude -p --output-format json|stream-json|text` of
// Claude Code 2.1.330, including its exact session error messages. Its
// stream-json has the recorded shape: a system init line, an assistant
// message with a thinking and a text block, and the result line.
func claude(inv *Invocation) int {
	f, err := parseFlags(inv.Args, []string{"--output-format", "--session-id", "--resume", "--model", "--append-system-prompt",
		"--permission-mode", "--permission-prompts", "--setting-sources"},
		[]string{"-p", "--print", "--verbose"})
	if err == nil {
		err = f.oneOf("--permission-mode", "acceptEdits", "auto", "bypassPermissions", "manual", "dontAsk", "plan")
	}
	if err == nil {
		err = f.oneOf("--permission-prompts", "host", "none")
	}
	if err == nil {
		err = f.oneOf("--setting-sources", "user", "project", "local", "user,project", "user,project,local")
	}
	if err != nil || len(f.rest) > 0 || !(f.bools["-p"] || f.bools["--print"]) {
		fmt.Fprintf(inv.Stderr, "error: %v (args %q)\n", err, inv.Args)
		return 1
	}
	if _, err := inv.record(); err != nil {
		return inv.die(err)
	}
	conv, err := inv.conversations(Claude, true)
	if err != nil {
		return inv.die(err)
	}
	id := f.values["--session-id"]
	switch resume := f.values["--resume"]; {
	case resume != "":
		if conv.turns(resume) == 0 {
			fmt.Fprintf(inv.Stderr, "No conversation found with session ID: %s\n", resume)
			return 1
		}
		id = resume
	case id != "":
		if !uuidRE.MatchString(id) {
			fmt.Fprintln(inv.Stderr, "Error: Invalid session ID. Must be a valid UUID.")
			return 1
		}
		if conv.turns(id) > 0 {
			fmt.Fprintf(inv.Stderr, "Error: Session ID %s is already in use.\n", id)
			return 1
		}
	default:
		id = newID()
	}
	stream := f.values["--output-format"] == "stream-json"
	if stream {
		if !f.bools["--verbose"] {
			fmt.Fprintln(inv.Stderr, "Error: When using --print, --output-format=stream-json requires --verbose")
			return 1
		}
		emitJSON(inv, map[string]any{"type": "system", "subtype": "init", "cwd": ".", "session_id": id, "tools": []string{"Read", "Edit"}})
	}
	if failMode() == "error" {
		emitJSON(inv, map[string]any{"type": "result", "subtype": "success", "is_error": true,
			"result":     "API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}",
			"session_id": id, "total_cost_usd": 0, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0}})
		return 1
	}
	n, err := conv.bump(id)
	if err != nil {
		return inv.die(err)
	}
	if format := f.values["--output-format"]; format != "json" && !stream {
		fmt.Fprintln(inv.Stdout, reply(n))
		return 0
	}
	if pad, _ := strconv.Atoi(os.Getenv(EnvPad)); stream && pad > 0 {
		// A tool's long output, before the reply.
		emitJSON(inv, map[string]any{"type": "user", "session_id": id, "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": strings.Repeat("x", pad)},
		}}})
	}
	if stream {
		perTurn := 1000
		if v, err := strconv.Atoi(os.Getenv(EnvContext)); err == nil && v > 0 {
			perTurn = v
		}
		ctx := perTurn * n
		emitJSON(inv, map[string]any{"type": "assistant", "session_id": id, "message": map[string]any{
			"id": "msg_1", "type": "message", "role": "assistant", "content": []any{
				map[string]any{"type": "thinking", "thinking": "Reading the note."},
				map[string]any{"type": "text", "text": reply(n)},
			},
			"usage": map[string]any{"input_tokens": 3, "cache_creation_input_tokens": ctx / 4, "cache_read_input_tokens": ctx - 3 - ctx/4, "output_tokens": 8},
		}})
		if gate := os.Getenv(EnvGate); gate != "" {
			if err := waitFor(gate); err != nil {
				return inv.die(err)
			}
		}
	}
	// total_cost_usd is the session's running total, as Claude Code
	// reports it on resume.
	emitJSON(inv, map[string]any{
		"type": "result", "subtype": "success", "is_error": false, "duration_ms": 256, "num_turns": 1,
		"result": reply(n), "session_id": id, "total_cost_usd": 0.0002 * float64(n), "stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": 10 * n, "output_tokens": 8, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
	})
	return 0
}

// waitFor waits until a file exists at path, for at most a minute.
func waitFor(path string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := os.Stat(path)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, fs.ErrNotExist):
			return err
		case time.Now().After(deadline):
			return fmt.Errorf("%s did not appear within a minute", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// emitJSON prints v as one JSON line.
func emitJSON(inv *Invocation, v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings, numbers and slices of them always marshal
	}
	fmt.Fprintln(inv.Stdout, string(b))
}

// codex imitates `codex exec --json [-s MODE] [resume ID] -`.
func codex(inv *Invocation) int {
	f, err := parseFlags(inv.Args, []string{"--model", "-m", "-c", "--config", "-s", "--sandbox"}, []string{"--json", "--skip-git-repo-check"})
	if err == nil {
		err = f.oneOf("-s", "read-only", "workspace-write", "danger-full-access")
	}
	if err == nil {
		err = f.oneOf("--sandbox", "read-only", "workspace-write", "danger-full-access")
	}
	if err != nil || len(f.rest) == 0 || f.rest[0] != "exec" || f.rest[len(f.rest)-1] != "-" {
		fmt.Fprintf(inv.Stderr, "error: unexpected arguments %q (%v)\n", inv.Args, err)
		return 2
	}
	if _, err := inv.record(); err != nil {
		return inv.die(err)
	}
	conv, err := inv.conversations(Codex, false)
	if err != nil {
		return inv.die(err)
	}
	id := newID()
	switch rest := f.rest[1 : len(f.rest)-1]; {
	case len(rest) == 2 && rest[0] == "resume":
		if conv.turns(rest[1]) == 0 {
			fmt.Fprintf(inv.Stderr, "Error: no rollout found for thread id %s\n", rest[1])
			return 1
		}
		id = rest[1]
	case len(rest) != 0:
		fmt.Fprintf(inv.Stderr, "error: unexpected arguments %q\n", rest)
		return 2
	}
	emit := func(v map[string]any) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err) // maps of strings and numbers always marshal
		}
		fmt.Fprintln(inv.Stdout, string(b))
	}
	emit(map[string]any{"type": "thread.started", "thread_id": id})
	emit(map[string]any{"type": "turn.started"})
	if failMode() == "error" {
		emit(map[string]any{"type": "turn.failed", "error": map[string]any{"message": "unexpected status 401 Unauthorized"}})
		return 1
	}
	n, err := conv.bump(id)
	if err != nil {
		return inv.die(err)
	}
	if pad, _ := strconv.Atoi(os.Getenv(EnvPad)); pad > 0 {
		emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_0", "type": "command_execution",
			"command": "cat big.log", "aggregated_output": strings.Repeat("x", pad), "exit_code": 0, "status": "completed"}})
	}
	emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_1", "type": "reasoning", "text": "**Reading the note**"}})
	emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_2", "type": "agent_message", "text": reply(n)}})
	// Running totals over the thread, as Codex CLI 0.169.0 reports them:
	// turn k uses 1200·k input tokens, 200 cached, 34 output.
	emit(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": 1200 * n * (n + 1) / 2, "cached_input_tokens": 200 * n, "output_tokens": 34 * n}})
	return 0
}
