package claudetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
)

// FakeTool is the line that makes the Claude fake ask for a tool call: a
// prompt line
//
//	FAKE TOOL Write <path> <content…>
//
// makes its model ask to Write the rest of the line (content, with "\n"
// for new lines) to path (relative to the working directory, or absolute).
// The fake then runs the PreToolUse hook of its --settings (exec form:
// "command" and "args", the hook input JSON on stdin, as Claude Code
// 2.1.330 sends it) and acts on the hook's answer as Claude Code 2.1.330
// does (see testdata/recorded/ask-*):
//
//   - "allow" (or no hook at all): the file is written, the tool result says
//     "File created successfully at: <path>", and the reply follows;
//   - "deny": nothing is written; the tool result, an error, is
//     "PreToolUse:Write hook error: <permissionDecisionReason>" and the
//     reply quotes it;
//   - "defer": the turn ends with a result line whose stop_reason is
//     tool_deferred, result "" and deferred_tool_use the call, exit 0; the
//     call is kept in the session, and `--resume <id>` with an empty stdin
//     asks the hook again (with no call kept, that fails as Claude Code
//     does: "Error: No deferred tool marker found in the resumed session…");
//   - no decision: Write is refused (--permission-mode default in -p mode
//     has nobody to ask): "Claude requested permissions to write to <path>,
//     but you haven't granted it yet."
//
// The reply after a tool result is "FAKE TOOL RESULT: <the tool result>".
const FakeTool = "FAKE TOOL "

// fakeCall is a tool call of the fake's model.
type fakeCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// Why is the text the model said before it.
	Why string `json:"why"`
}

// toolCallIn returns the call a prompt asks for, if any.
func toolCallIn(prompt, dir string) (fakeCall, bool, error) {
	for _, line := range strings.Split(prompt, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), FakeTool)
		if !ok {
			continue
		}
		f := strings.SplitN(rest, " ", 3)
		if len(f) < 2 || f[0] != "Write" {
			return fakeCall{}, false, fmt.Errorf("bad %q line %q: want %sWrite <path> <content>", FakeTool, line, FakeTool)
		}
		path := f[1]
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		content := ""
		if len(f) == 3 {
			content = strings.ReplaceAll(f[2], `\n`, "\n")
		}
		in, err := json.Marshal(map[string]string{"file_path": path, "content": content})
		if err != nil {
			return fakeCall{}, false, err
		}
		return fakeCall{ID: "toolu_" + strings.ReplaceAll(fakekit.NewID(), "-", "")[:24], Name: "Write", Input: in,
			Why: "I will write " + f[1] + " now."}, true, nil
	}
	return fakeCall{}, false, nil
}

// fakeHook is one command hook of the settings.
type fakeHook struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// preToolUseHooks returns the PreToolUse command hooks of a --settings
// value (JSON, or the name of a file holding it) whose matcher matches
// tool.
func preToolUseHooks(settings, tool string) ([]fakeHook, error) {
	if settings == "" {
		return nil, nil
	}
	b := []byte(settings)
	if !strings.HasPrefix(strings.TrimSpace(settings), "{") {
		var err error
		if b, err = os.ReadFile(settings); err != nil {
			return nil, fmt.Errorf("--settings: %w", err)
		}
	}
	var s struct {
		Hooks struct {
			PreToolUse []struct {
				Matcher string     `json:"matcher"`
				Hooks   []fakeHook `json:"hooks"`
			}
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("--settings: %w", err)
	}
	var hooks []fakeHook
	for _, m := range s.Hooks.PreToolUse {
		if m.Matcher != "" && m.Matcher != "*" && !contains(strings.Split(m.Matcher, "|"), tool) {
			continue
		}
		for _, h := range m.Hooks {
			if h.Type != "command" || h.Args == nil {
				return nil, fmt.Errorf("--settings: the fake runs command hooks in exec form only (command and args), not %+v", h)
			}
			hooks = append(hooks, h)
		}
	}
	return hooks, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// decision is a hook's answer.
type decision struct{ Decision, Reason string }

// askHooks runs the hooks for call as Claude Code does and returns the
// first decision one gives ("" when none does).
func askHooks(inv *fakekit.Invocation, hooks []fakeHook, session, mode string, call fakeCall) (decision, error) {
	in, err := json.Marshal(map[string]any{
		"session_id": session, "transcript_path": filepath.Join(inv.State, "transcript.jsonl"), "cwd": inv.Dir,
		"permission_mode": mode, "hook_event_name": "PreToolUse", "tool_name": call.Name, "tool_input": call.Input,
		"tool_use_id": call.ID,
	})
	if err != nil {
		return decision{}, err
	}
	for _, h := range hooks {
		cmd := exec.Command(h.Command, h.Args...)
		cmd.Dir = inv.Dir
		cmd.Stdin = bytes.NewReader(in)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == 2:
			// Exit status 2 blocks the call, with stderr as the reason.
			return decision{"deny", strings.TrimSpace(stderr.String())}, nil
		case err != nil:
			// Any other failure is not a decision.
			fmt.Fprintf(inv.Stderr, "PreToolUse:%s hook failed: %v: %s\n", call.Name, err, stderr.String())
			continue
		}
		var out struct {
			HookSpecificOutput struct {
				HookEventName            string `json:"hookEventName"`
				PermissionDecision       string `json:"permissionDecision"`
				PermissionDecisionReason string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		if len(bytes.TrimSpace(stdout.Bytes())) == 0 || json.Unmarshal(stdout.Bytes(), &out) != nil {
			continue
		}
		if d := out.HookSpecificOutput; d.HookEventName == "PreToolUse" && d.PermissionDecision != "" {
			return decision{d.PermissionDecision, d.PermissionDecisionReason}, nil
		}
	}
	return decision{}, nil
}

// toolTurn is the part of a turn from the model's tool call to its reply:
// it asks the hooks, and either defers the call (deferred true; the call
// is kept in the session) or makes it and returns the tool result.
func toolTurn(inv *fakekit.Invocation, conv fakekit.Conversations, settings, mode, session string, call fakeCall) (result string, isError, deferred bool, err error) {
	hooks, err := preToolUseHooks(settings, call.Name)
	if err != nil {
		return "", false, false, err
	}
	var in struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return "", false, false, err
	}
	d := decision{Decision: "allow"}
	if len(hooks) > 0 {
		if d, err = askHooks(inv, hooks, session, mode, call); err != nil {
			return "", false, false, err
		}
	}
	pending, err := conv.File(session, ".deferred")
	if err != nil {
		return "", false, false, err
	}
	switch d.Decision {
	case "defer":
		b, err := json.Marshal(call)
		if err != nil {
			return "", false, false, err
		}
		return "", false, true, os.WriteFile(pending, b, 0o600)
	case "allow":
		if err := os.WriteFile(in.FilePath, []byte(in.Content), 0o644); err != nil {
			return "", false, false, err
		}
		result = "File created successfully at: " + in.FilePath
	case "deny":
		result, isError = "PreToolUse:"+call.Name+" hook error: "+d.Reason, true
	default:
		result, isError = "Claude requested permissions to write to "+in.FilePath+", but you haven't granted it yet.", true
	}
	if err := os.Remove(pending); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, false, err
	}
	return result, isError, false, nil
}

// deferredCall returns the call a session keeps, if any.
func deferredCall(conv fakekit.Conversations, session string) (fakeCall, bool, error) {
	p, err := conv.File(session, ".deferred")
	if err != nil {
		return fakeCall{}, false, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fakeCall{}, false, nil
	}
	if err != nil {
		return fakeCall{}, false, err
	}
	var c fakeCall
	return c, true, json.Unmarshal(b, &c)
}

// noDeferredCall is Claude Code 2.1.330's refusal, exit 1, of a resume
// with an empty stdin when the session has no deferred call.
const noDeferredCall = "Error: No deferred tool marker found in the resumed session. Either the session was not deferred, the marker is stale (tool already ran), or it exceeds the tail-scan window. Provide a prompt to continue the conversation."
