package claude

import (
	"errors"
	"strconv"
	"strings"

	"github.com/knotd/knotd/internal/agents/kit"
)

// Driver runs Claude Code headless (preset claude):
//
//	claude -p --output-format stream-json --verbose P --session-id <session> [--model M] [--max-budget-usd C] [--append-system-prompt=I]   (new)
//	claude -p --output-format stream-json --verbose P --resume <handle>      [--model M] [--max-budget-usd C] [--append-system-prompt=I]   (resume)
//
// where P are the flags of the agent's Permissions (permissionFlags),
// passed on every turn: the permission mode is the launch's, not the
// session's, so a resumed turn runs with the level configured now.
// with the prompt on standard input and the vault root as working directory
// (Claude Code keeps sessions per directory). The first turn creates the
// session with the strand's own UUID; later turns resume the handle Claude
// reported, never with --continue (which picks whatever session is newest).
// stream-json prints one JSON event per line as the turn goes (the
// session's init, each assistant and user message with its thinking,
// tool_use and tool_result blocks), so the run's transcript has all of it;
// the last event is the result object, also when the turn fails and
// claude exits 1: "result" is the reply, "session_id" the handle,
// "is_error" marks a failed turn, "usage" and "total_cost_usd" the cost.
// The parser takes the result from the lines as they arrive, so a stream
// longer than the captured output still gives its reply.
//
// Two refusals are recovered once per run by starting a fresh session with a
// new UUID (see sessionLost): "Session ID … is already in use" (the session
// exists although knotd has no handle for it) and "No conversation found
// with session ID" (the handle is unknown to this user's Claude home, for
// example after the vault was synced to another machine). Claude Code
// 2.1.330 stores sessions per working directory but resumes them from any
// directory under the same home.

type Driver struct{}

// Delivery implements kit.Driver.
func (Driver) Delivery() kit.PromptMode { return kit.PromptStdin }

// MaxContext implements kit.ContextDefaulter: Claude Code's models hold
// 200k tokens; a conversation past 160k starts afresh before the CLI
// would compact it.
func (Driver) MaxContext() int64 { return 160_000 }

// InlineInstructions implements kit.Driver.
func (Driver) InlineInstructions() bool { return false }

// Resumes implements kit.Driver.
func (Driver) Resumes() bool { return true }

// DefaultProgram implements kit.Driver.
func (Driver) DefaultProgram() string { return "claude" }

// Parser implements kit.Driver.
func (Driver) Parser() kit.Parser { return newParser() }

// Argv implements kit.Driver.
func (Driver) Argv(a *kit.Attempt) ([]string, error) {
	argv := append(append([]string(nil), a.Program...), "-p", "--output-format", "stream-json", "--verbose")
	perm, err := permissionFlags(a)
	if err != nil {
		return nil, err
	}
	argv = append(argv, perm...)
	if a.Resume != "" {
		argv = append(argv, "--resume", a.Resume)
	} else {
		argv = append(argv, "--session-id", a.Session)
	}
	if a.Model != "" {
		argv = append(argv, "--model", a.Model)
	}
	if c := a.MaxCostUSD; c > 0 {
		argv = append(argv, "--max-budget-usd", strconv.FormatFloat(c, 'f', -1, 64))
	}
	if a.Instructions != "" {
		// One element: instructions that start with "-" (a Markdown list)
		// must not be read as a flag.
		argv = append(argv, "--append-system-prompt="+a.Instructions)
	}
	return argv, nil
}

// Turn: Claude Code 2.1.330's total_cost_usd on a resumed session is the
// session's running total, while its token counts are the turn's
// (testdata/recorded: json-new-session and json-resume both report 10 input
// and 8 output tokens, and a cost of 0.0002, then 0.0004).
func (Driver) Turn(total, before kit.Usage) kit.Usage {
	u := total
	u.CostUSD = max(total.CostUSD-before.CostUSD, 0)
	return u
}

// The stderr texts of Claude Code 2.1.330's two session refusals (see
// testdata/README.md).
const (
	inUse    = "is already in use"
	notFound = "No conversation found"
)

// SessionLost implements kit.SessionRecoverer: the two refusals above.
func (Driver) SessionLost(exitCode int, p kit.Parsed, stderr string) (string, bool) {
	if exitCode == 0 || p.Reply != "" {
		return "", false
	}
	if strings.Contains(stderr, inUse) || strings.Contains(stderr, notFound) {
		return kit.FirstLine(stderr, 200), true
	}
	return "", false
}

// parser reads --output-format stream-json with the transcript's
// decoder as the lines arrive: the reply, handle, usage and failure come
// from the last line whose type is "result", which also makes up the whole
// output of --output-format json.
type parser struct{ kit.BlockStream }

func newParser() *parser {
	return &parser{kit.NewBlockStream(kit.Decoding{Format: FormatStreamJSON, New: newNormalizer})}
}

// Finish implements kit.Parser.
func (cp *parser) Finish(stdout []byte, truncated bool, _ string) (kit.Parsed, error) {
	d := cp.Decoded(stdout)
	p := kit.Parsed{Message: &d.Message}
	if !d.Ended {
		switch {
		case len(strings.TrimSpace(string(stdout))) == 0:
			return p, kit.ErrNoOutput
		case truncated && cp.Lines() == 0:
			return p, errors.New("no Claude result object in the output (the output was cut at the cap)")
		}
		return p, errors.New("no Claude result object in the output")
	}
	p.Reply, p.Handle, p.Usage = d.Reply, d.Handle, d.Usage
	p.Context = d.ContextTokens
	p.Held = d.Held
	if d.Failure != "" {
		p.AgentErr = kit.FirstLine(d.Failure, 300)
	}
	return p, nil
}
