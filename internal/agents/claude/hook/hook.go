// Package hook is knotd's own Claude Code PreToolUse hook, which the
// claude preset at permissions: ask has Claude Code run before each tool
// call (`knotd hook claude-pretooluse ANSWERS_FILE`, given with
// --settings). It reads the hook input Claude Code 2.1.330 sends on
// standard input (session_id, cwd, hook_event_name, tool_name,
// tool_input, tool_use_id…) and answers on standard output:
//
//   - a read-only tool (Read, Glob, Grep, LS…: ReadOnly) gets no decision:
//     Claude Code's own --permission-mode default lets it read in the
//     working directory (the vault) and refuses the rest;
//   - a write (Write, Edit, MultiEdit, NotebookEdit) whose file is outside
//     the vault is denied, saying so: the agent never writes there, and
//     nobody is asked about it;
//   - a call whose hash (question.Call.Hash of tool_name and tool_input)
//     a denial in ANSWERS_FILE names is denied with the user's reason,
//     which the model sees; one an approval names is allowed (a denial
//     wins over an approval of the same call);
//   - anything else is deferred: Claude Code ends the turn with
//     stop_reason tool_deferred, and knotd asks the user.
//
// ANSWERS_FILE is written by knotd (WriteAnswers) before each run, in the
// vault's folder of knotd's state directory: the vault's root and the
// answers the run may apply. A missing, unreadable or garbled file defers
// every call that is no read: it never allows one.
package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/question"
)

// MaxInput bounds the hook input read from Claude Code: a Write's
// content is in it. A call with a larger input is denied, saying why
// (knotd could not show it to the user, nor bind an answer to it).
const MaxInput = 8 << 20

// MaxAnswersFile bounds the answers file read.
const MaxAnswersFile = 1 << 20

// ReadOnly are the Claude Code 2.1.330 tools that only read (or keep the
// agent's own to-do list): they pass with no decision.
var ReadOnly = []string{"Read", "Glob", "Grep", "LS", "NotebookRead", "TodoWrite", "TodoRead", "ToolSearch",
	"ListAgents", "CronList", "TaskOutput"}

// writeTools are the tools that write a file, with the input field that
// names it.
var writeTools = map[string]string{"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}

// Answers is what knotd writes to the answers file for one run.
type Answers struct {
	// Vault is the vault's root, absolute: no write outside it is allowed.
	Vault string `json:"vault"`
	// Answers are the user's answers the run may apply.
	Answers []question.Answer `json:"answers,omitempty"`
}

// WriteAnswers writes the answers file at path (0600, in a directory of
// its own that it creates 0700), replacing it whole: the hook never reads
// half a file.
func WriteAnswers(path string, a Answers) error {
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("claude hook answers: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("claude hook answers: %w", err)
	}
	f, err := os.CreateTemp(dir, ".answers-*")
	if err != nil {
		return fmt.Errorf("claude hook answers: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name()) // the write failed already; this only tidies
		return fmt.Errorf("claude hook answers: %w", err)
	}
	return nil
}

// readAnswers reads the answers file; ok is false when it is missing,
// unreadable, too large or garbled.
func readAnswers(path string) (Answers, bool) {
	f, err := os.Open(path)
	if err != nil {
		return Answers{}, false
	}
	defer f.Close() // read only
	b, err := io.ReadAll(io.LimitReader(f, MaxAnswersFile+1))
	if err != nil || len(b) > MaxAnswersFile {
		return Answers{}, false
	}
	var a Answers
	if err := json.Unmarshal(b, &a); err != nil || !filepath.IsAbs(a.Vault) {
		return Answers{}, false
	}
	return a, true
}

// Input is the part of Claude Code's PreToolUse hook input the hook reads.
type Input struct {
	SessionID     string          `json:"session_id"`
	HookEventName string          `json:"hook_event_name"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolUseID     string          `json:"tool_use_id"`
	Cwd           string          `json:"cwd"`
}

// Call is the call the hook input asks about, as knotd holds it: its
// hash is what an answer is bound to.
func (in Input) Call() question.Call {
	return question.Call{Tool: in.ToolName, Input: in.ToolInput, ToolUseID: in.ToolUseID}
}

// Decision is the hook's answer: "" (no decision), "allow", "deny" or
// "defer", and the reason a denial gives the model.
type Decision struct {
	Decision string
	Reason   string
}

// Decide decides a call; answersOK is false when the answers file could
// not be read.
func Decide(in Input, a Answers, answersOK bool) Decision {
	if slices.Contains(ReadOnly, in.ToolName) {
		return Decision{}
	}
	if !answersOK {
		return Decision{Decision: "defer"}
	}
	if field, ok := writeTools[in.ToolName]; ok {
		if p, ok := pathIn(in.ToolInput, field); ok && !inside(a.Vault, in.Cwd, p) {
			return Decision{Decision: "deny", Reason: fmt.Sprintf("knotd: %s of %s refused: the file is outside the vault (%s), where knotd's agents never write", in.ToolName, p, a.Vault)}
		}
	}
	call := in.Call()
	var approved bool
	for _, ans := range a.Answers {
		if !ans.Applies(call) {
			continue
		}
		switch ans.Verdict {
		case question.Deny:
			why := "no reason given"
			if ans.Why != "" {
				why = ans.Why
			}
			return Decision{Decision: "deny", Reason: fmt.Sprintf("the user denied this call (knotd question %s): %s. Do not do it; carry on without it.", ans.ID, why)}
		case question.Approve:
			approved = true
		}
	}
	if approved {
		return Decision{Decision: "allow"}
	}
	return Decision{Decision: "defer"}
}

// pathIn returns the string field of a tool's input.
func pathIn(input json.RawMessage, field string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return "", false
	}
	var s string
	if json.Unmarshal(m[field], &s) != nil || s == "" {
		return "", false
	}
	return s, true
}

// inside reports whether p (relative to cwd, or absolute) is inside root,
// lexically and once the symbolic links of its existing part are
// resolved.
func inside(root, cwd, p string) bool {
	if !filepath.IsAbs(p) {
		if !filepath.IsAbs(cwd) {
			return false
		}
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	if !within(filepath.Clean(root), p) {
		return false
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false
	}
	// The longest part of p that exists, with its links resolved, and
	// the rest as it is.
	existing, rest := p, ""
	for {
		if r, err := filepath.EvalSymlinks(existing); err == nil {
			return within(realRoot, filepath.Join(r, rest))
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return false
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Output is the hook's standard output for a decision, as Claude Code
// 2.1.330 reads it: nothing for no decision, else
// {"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":…,
// "permissionDecisionReason":…}}.
func (d Decision) Output() []byte {
	if d.Decision == "" {
		return nil
	}
	out := map[string]string{"hookEventName": "PreToolUse", "permissionDecision": d.Decision}
	if d.Reason != "" {
		out["permissionDecisionReason"] = d.Reason
	}
	b, err := json.Marshal(map[string]any{"hookSpecificOutput": out})
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return append(b, '\n')
}

// PreToolUse is the hook: it reads the hook input from stdin, decides
// with the answers file, and writes the decision to stdout. An input it
// cannot read defers the call (a read-only tool's name is needed to let
// it pass); one too large is denied, saying why.
func PreToolUse(stdin io.Reader, answersFile string, stdout io.Writer) error {
	b, err := io.ReadAll(io.LimitReader(stdin, MaxInput+1))
	if err != nil {
		return fmt.Errorf("knotd hook claude-pretooluse: read the hook input: %w", err)
	}
	var d Decision
	var in Input
	switch {
	case len(b) > MaxInput:
		d = Decision{Decision: "deny", Reason: fmt.Sprintf("knotd: this call's input is over %d MiB, too large for knotd to show it to the user; make it smaller", MaxInput>>20)}
	case json.Unmarshal(b, &in) != nil || in.HookEventName != "PreToolUse" || in.ToolName == "":
		d = Decision{Decision: "defer"}
	default:
		a, ok := readAnswers(answersFile)
		d = Decide(in, a, ok)
	}
	if _, err := io.Copy(stdout, bytes.NewReader(d.Output())); err != nil {
		return fmt.Errorf("knotd hook claude-pretooluse: %w", err)
	}
	return nil
}

// ErrUsage is returned by Main for arguments it does not know.
var ErrUsage = errors.New("usage: knotd hook claude-pretooluse ANSWERS_FILE (run by Claude Code, not by you)")

// Main runs `knotd hook ARGS…` (args without "hook").
func Main(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 2 || args[0] != "claude-pretooluse" {
		return ErrUsage
	}
	return PreToolUse(stdin, args[1], stdout)
}
