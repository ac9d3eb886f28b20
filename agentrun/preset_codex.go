package agentrun

import (
	"errors"
	"fmt"
	"github.com/knotd/knotd/agents/codex"
	"strings"
)

// codexDriver runs the OpenAI Codex CLI non-interactively:
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
// (Codex CLI 0.169.0, testdata/codex-0.169.0: exec-resume-unknown,
// exec-resume-after-sessions-wiped); the run then starts a fresh thread,
// once (see sessionLost).
type codexDriver struct{}

func (codexDriver) delivery() PromptMode     { return PromptStdin }
func (codexDriver) inlineInstructions() bool { return false }
func (codexDriver) resumes() bool            { return true }
func (codexDriver) defaultProgram() string   { return "codex" }
func (codexDriver) limits() Limits           { return Limits{} }
func (codexDriver) parser() outputParser     { return newCodexParser() }

func (codexDriver) argv(a *attempt) ([]string, error) {
	argv := append(append([]string(nil), a.program...), "exec", "--json", "--skip-git-repo-check")
	argv = append(argv, codexPermissionFlags(a.req.Agent.permissions())...)
	if a.model != "" {
		argv = append(argv, "--model", a.model)
	}
	if a.instructions != "" {
		argv = append(argv, "-c", "developer_instructions="+tomlString(a.instructions))
	}
	if a.resume != "" {
		argv = append(argv, "resume", a.resume)
	}
	return append(argv, "-"), nil
}

// turn: Codex CLI 0.169.0's turn.completed usage on a resumed thread is the
// thread's running total (testdata/codex-0.169.0: exec-new 100 input
// tokens, exec-resume 300, exec-resume-2 600), tokens of every kind.
func (codexDriver) turn(total, before Usage) Usage { return total.Minus(before) }

// codexNoThread is what Codex CLI 0.169.0 says, on standard error, when it
// has no thread for the handle it was asked to resume.
const codexNoThread = "no rollout found for thread id"

func (codexDriver) sessionLost(exitCode int, p parsed, stderr string) (string, bool) {
	if exitCode == 0 || p.reply != "" {
		return "", false
	}
	if i := strings.Index(stderr, codexNoThread); i >= 0 {
		return firstLine(stderr[i:], 200), true
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

// codexParser reads the JSON lines of codex exec --json with the
// decoder of agents/codex as they arrive.
type codexParser struct{ blockStream }

func newCodexParser() *codexParser {
	return &codexParser{newBlockStream(codex.FormatJSON)}
}

func (cp *codexParser) finish(stdout []byte, _ bool, _ string) (parsed, error) {
	d := cp.decoded(stdout)
	p := parsed{message: &d.Message}
	if d.Events == 0 {
		if d.Other == 0 {
			return p, errNoOutput
		}
		return p, errors.New("no codex JSON events in the output")
	}
	p.reply, p.handle, p.usage = d.Reply, d.Handle, d.Usage
	if d.Failure != "" {
		p.agentErr = firstLine(d.Failure, 300)
	}
	if d.Other > 0 {
		p.notes = append(p.notes, fmt.Sprintf("codex printed %d lines that are not JSON events", d.Other))
	}
	return p, nil
}
