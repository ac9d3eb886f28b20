package codex

import (
	"errors"
	"fmt"
	"strings"

	"github.com/knotd/knotd/internal/agents/kit"
)

// Driver runs the OpenAI Codex CLI non-interactively:
//
//	codex exec --json --skip-git-repo-check P [--model M] [-c developer_instructions="I"] -                  (new)
//	codex exec --json --skip-git-repo-check P [--model M] [-c developer_instructions="I"] resume <handle> -  (resume)
//
// P are the sandbox flags of the agent's Permissions (codexPermissionFlags). `codex exec
// resume` has no -s of its own, but exec's -s before "resume" applies to the
// resumed turn (Codex CLI 0.169.0, seen with the real CLI: a thread started
// in workspace-write and resumed with -s read-only has its patch refused,
// and codex tells the model the new sandbox_mode), so a resumed turn runs
// with the level configured now. The developer_instructions, on the other
// hand, are the thread's: a resumed turn sends the model those the thread
// started with, and ignores a different -c developer_instructions.
//
// The prompt is read from standard input ("-"). --json makes codex print
// one JSON event per line (codex-rs/exec/src/exec_events.rs): the handle is
// the thread_id of "thread.started", the reply the text of the last
// "item.completed" item of type "agent_message", usage comes from
// "turn.completed", and "turn.failed" or "error" events report failures.
// Instructions become codex's developer_instructions setting through -c,
// written as a TOML string.
//
// A thread codex no longer has (its session store was lost or wiped, or
// the handle is another agent's) is refused with exit 1, nothing on
// standard output, and "no rollout found for thread id" on standard error
// (Codex CLI 0.169.0, testdata/recorded: exec-resume-unknown,
// exec-resume-after-sessions-wiped); the run then starts a fresh thread,
// once (see sessionLost).
type Driver struct{}

// Delivery implements kit.Driver.
func (Driver) Delivery() kit.PromptMode { return kit.PromptStdin }

// InlineInstructions implements kit.Driver.
func (Driver) InlineInstructions() bool { return false }

// Resumes implements kit.Driver.
func (Driver) Resumes() bool { return true }

// DefaultProgram implements kit.Driver.
func (Driver) DefaultProgram() string { return "codex" }

// Parser implements kit.Driver.
func (Driver) Parser() kit.Parser { return newParser() }

// Argv implements kit.Driver.
func (Driver) Argv(a *kit.Attempt) ([]string, error) {
	argv := append(append([]string(nil), a.Program...), "exec", "--json", "--skip-git-repo-check")
	argv = append(argv, permissionFlags(a.Permissions)...)
	if a.Model != "" {
		argv = append(argv, "--model", a.Model)
	}
	if a.Instructions != "" {
		argv = append(argv, "-c", "developer_instructions="+tomlString(a.Instructions))
	}
	if a.Resume != "" {
		argv = append(argv, "resume", a.Resume)
	}
	return append(argv, "-"), nil
}

// Turn: Codex CLI 0.169.0's turn.completed usage on a resumed thread is the
// thread's running total (testdata/recorded: exec-new 100 input
// tokens, exec-resume 300, exec-resume-2 600), tokens of every kind.
func (Driver) Turn(total, before kit.Usage) kit.Usage { return total.Minus(before) }

// TurnContext implements kit.TurnContexter: the turn's input tokens.
// Codex's input_tokens already hold the cached ones (cached_input_tokens
// is a part of them, as in the Responses API's usage: testdata/written
// has 25010 input, 24704 of them cached), so they are not added again. A
// turn of several model calls (tool calls) reports the sum of their
// inputs, more than the context held at its last call: the estimate errs
// high, so a conversation starts afresh early, never fills up.
func (Driver) TurnContext(turn kit.Usage) int64 { return turn.InputTokens }

// MaxContext implements kit.ContextDefaulter: Codex's default models
// (gpt-5-codex and its successors) hold 272,000 input tokens; 200,000
// leaves room for the turn itself (its tool results and answer), and for
// the over-estimate of a turn with several model calls (TurnContext).
func (Driver) MaxContext() int64 { return 200_000 }

// noThread is what Codex CLI 0.169.0 says, on standard error, when it
// has no thread for the handle it was asked to resume.
const noThread = "no rollout found for thread id"

// SessionLost implements kit.SessionRecoverer: a thread Codex does not have.
func (Driver) SessionLost(exitCode int, p kit.Parsed, stderr string) (string, bool) {
	if exitCode == 0 || p.Reply != "" {
		return "", false
	}
	if i := strings.Index(stderr, noThread); i >= 0 {
		return kit.FirstLine(stderr[i:], 200), true
	}
	return "", false
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// parser reads the JSON lines of codex exec --json with the
// decoder of agents/codex as they arrive.
type parser struct{ kit.BlockStream }

func newParser() *parser {
	return &parser{kit.NewBlockStream(Formats[0])}
}

// Finish implements kit.Parser.
func (cp *parser) Finish(stdout []byte, _ bool, _ string) (kit.Parsed, error) {
	d := cp.Decoded(stdout)
	p := kit.Parsed{Message: &d.Message}
	if d.Events == 0 {
		if d.Other == 0 {
			return p, kit.ErrNoOutput
		}
		return p, errors.New("no codex JSON events in the output")
	}
	p.Reply, p.Handle, p.Usage = d.Reply, d.Handle, d.Usage
	if d.Failure != "" {
		p.AgentErr = kit.FirstLine(d.Failure, 300)
	}
	if d.Other > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("codex printed %d lines that are not JSON events", d.Other))
	}
	return p, nil
}
