package codextest

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
)

// Fake imitates `codex exec --json [-s MODE] [resume ID] -`.
func Fake(inv *fakekit.Invocation) int {
	f, err := fakekit.ParseFlags(inv.Args, []string{"--model", "-m", "-c", "--config", "-s", "--sandbox"}, []string{"--json", "--skip-git-repo-check"})
	if err == nil {
		err = f.OneOf("-s", "read-only", "workspace-write", "danger-full-access")
	}
	if err == nil {
		err = f.OneOf("--sandbox", "read-only", "workspace-write", "danger-full-access")
	}
	if err != nil || len(f.Rest) == 0 || f.Rest[0] != "exec" || f.Rest[len(f.Rest)-1] != "-" {
		fmt.Fprintf(inv.Stderr, "error: unexpected arguments %q (%v)\n", inv.Args, err)
		return 2
	}
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	conv, err := inv.Conversations("codex", false)
	if err != nil {
		return inv.Die(err)
	}
	id := fakekit.NewID()
	switch rest := f.Rest[1 : len(f.Rest)-1]; {
	case len(rest) == 2 && rest[0] == "resume":
		if conv.Turns(rest[1]) == 0 {
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
	if fakekit.FailMode() == "error" {
		emit(map[string]any{"type": "turn.failed", "error": map[string]any{"message": "unexpected status 401 Unauthorized"}})
		return 1
	}
	n, err := conv.Bump(id)
	if err != nil {
		return inv.Die(err)
	}
	if pad, _ := strconv.Atoi(os.Getenv(fakekit.EnvPad)); pad > 0 {
		emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_0", "type": "command_execution",
			"command": "cat big.log", "aggregated_output": strings.Repeat("x", pad), "exit_code": 0, "status": "completed"}})
	}
	emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_1", "type": "reasoning", "text": "**Reading the note**"}})
	emit(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_2", "type": "agent_message", "text": fakekit.Reply(n)}})
	// Running totals over the thread, as Codex CLI 0.169.0 reports them:
	// turn k uses 1200·k input tokens, 200 cached, 34 output.
	emit(map[string]any{"type": "turn.completed", "usage": map[string]any{"input_tokens": 1200 * n * (n + 1) / 2, "cached_input_tokens": 200 * n, "output_tokens": 34 * n}})
	return 0
}
