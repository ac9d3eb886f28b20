package agentrun

import (
	"errors"
	"strconv"
	"strings"

	"github.com/knotd/knotd/transcript"
)

// claudeDriver runs Claude Code headless:
//
//	claude -p --output-format stream-json --verbose P --session-id <session> [--model M] [--max-budget-usd C] [--append-system-prompt=I]   (new)
//	claude -p --output-format stream-json --verbose P --resume <handle>      [--model M] [--max-budget-usd C] [--append-system-prompt=I]   (resume)
//
// where P are the flags of the agent's Permissions (claudePermissionFlags),
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

type claudeDriver struct{}

func (claudeDriver) delivery() PromptMode     { return PromptStdin }
func (claudeDriver) inlineInstructions() bool { return false }
func (claudeDriver) resumes() bool            { return true }
func (claudeDriver) defaultProgram() string   { return "claude" }
func (claudeDriver) limits() Limits           { return Limits{} }
func (claudeDriver) parser() outputParser     { return newClaudeParser() }

// maxContext is the default max_context: Claude Code's models hold 200k
// tokens; a conversation past 160k starts afresh before the CLI would
// compact it.
func (claudeDriver) maxContext() int64 { return 160_000 }

func (claudeDriver) argv(a *attempt) ([]string, error) {
	argv := append(append([]string(nil), a.program...), "-p", "--output-format", "stream-json", "--verbose")
	argv = append(argv, claudePermissionFlags(a.req.Agent.permissions())...)
	if a.resume != "" {
		argv = append(argv, "--resume", a.resume)
	} else {
		argv = append(argv, "--session-id", a.session)
	}
	if a.model != "" {
		argv = append(argv, "--model", a.model)
	}
	if c := a.req.MaxCostUSD; c > 0 {
		argv = append(argv, "--max-budget-usd", strconv.FormatFloat(c, 'f', -1, 64))
	}
	if a.instructions != "" {
		// One element: instructions that start with "-" (a Markdown list)
		// must not be read as a flag.
		argv = append(argv, "--append-system-prompt="+a.instructions)
	}
	return argv, nil
}

// turn: Claude Code 2.1.330's total_cost_usd on a resumed session is the
// session's running total, while its token counts are the turn's
// (testdata/claude: json-new-session and json-resume both report 10 input
// and 8 output tokens, and a cost of 0.0002, then 0.0004).
func (claudeDriver) turn(total, before Usage) Usage {
	u := total
	u.CostUSD = max(total.CostUSD-before.CostUSD, 0)
	return u
}

// The stderr texts of Claude Code 2.1.330's two session refusals (see
// testdata/claude/README.md).
const (
	claudeInUse    = "is already in use"
	claudeNotFound = "No conversation found"
)

func (claudeDriver) sessionLost(exitCode int, p parsed, stderr string) (string, bool) {
	if exitCode == 0 || p.reply != "" {
		return "", false
	}
	if strings.Contains(stderr, claudeInUse) || strings.Contains(stderr, claudeNotFound) {
		return firstLine(stderr, 200), true
	}
	return "", false
}

// claudeParser reads --output-format stream-json with the transcript's
// decoder as the lines arrive: the reply, handle, usage and failure come
// from the last line whose type is "result", which also makes up the whole
// output of --output-format json.
type claudeParser struct{ blockStream }

func newClaudeParser() *claudeParser {
	return &claudeParser{newBlockStream(transcript.FormatClaudeStreamJSON)}
}

func (cp *claudeParser) finish(stdout []byte, truncated bool, _ string) (parsed, error) {
	d := cp.decoded(stdout)
	p := parsed{message: &d.Message}
	if !d.Ended {
		switch {
		case len(strings.TrimSpace(string(stdout))) == 0:
			return p, errNoOutput
		case truncated && cp.lines == 0:
			return p, errors.New("no Claude result object in the output (the output was cut at the cap)")
		}
		return p, errors.New("no Claude result object in the output")
	}
	p.reply, p.handle, p.usage = d.Reply, d.Handle, d.Usage
	p.context = d.ContextTokens
	if d.Failure != "" {
		p.agentErr = firstLine(d.Failure, 300)
	}
	return p, nil
}

// errNoOutput is the parse error of an agent that printed nothing.
var errNoOutput = errors.New("no output")
