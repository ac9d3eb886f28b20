package agentrun

import (
	"time"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/transcript"
)

// Outcome is how a run ended: exactly one of OutcomeOK, OutcomeFailed,
// OutcomeTimeout or OutcomeCanceled.
type Outcome string

// The closed set of outcomes.
const (
	// OutcomeOK: the agent exited successfully with a non-empty reply.
	OutcomeOK Outcome = "ok"
	// OutcomeFailed: the agent could not be started, exited with an error,
	// reported an error, or gave an empty or unreadable reply.
	OutcomeFailed Outcome = "failed"
	// OutcomeTimeout: the run hit its wall-clock limit and was killed.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeCanceled: the caller's context ended (knotd is stopping) and
	// the run was killed.
	OutcomeCanceled Outcome = "canceled"
)

// Result is what one run produced. Every field is filled as far as the run
// got; a failed run still carries its stderr tail and raw output.
type Result struct {
	// Outcome is how the run ended.
	Outcome Outcome
	// Reason is a short human explanation when Outcome is not ok, such as
	// "exit status 1: API Error: 401" or "timed out after 10m0s".
	Reason string
	// Reply is the agent's reply text. It may be non-empty when the run
	// failed (for example an error message the CLI printed as its result).
	Reply string
	// Resume is the resume handle the agent reported for this
	// conversation, empty when it reported none. The caller stores it as
	// knot_resume when it changed.
	Resume string
	// Restarted is set when the agent could not continue the conversation
	// it was asked to resume and the run started a fresh one instead.
	Restarted *Restart
	// ContextTokens is how many tokens the conversation's context held at
	// the turn's last model call (its input, cached or not), 0 when the
	// agent does not report it. Codex CLI and Gemini CLI report only the
	// turn's input, its model calls summed: for them it is that, more
	// than the context held when the turn had several calls. The caller
	// keeps it for the next turn (Request.LastContext).
	ContextTokens int64
	// ContextWindow is the context size the agent reported (ACP's
	// usage_update size), 0 when it reported none.
	ContextWindow int64
	// Agent is the name of the agent that ran; Preset its preset ("" for
	// a generic command).
	Agent, Preset string
	// Model is the model the run asked for, empty when none.
	Model string
	// Argv is the command line of the last attempt (empty for digest).
	Argv []string
	// Prompt is the prompt of the last attempt (empty for digest).
	Prompt string
	// ExitCode is the agent's exit status; -1 when it did not exit by
	// itself (killed, not started) or ran in-process.
	ExitCode int
	// NotStarted says why the agent's process was never started (its
	// program was not found or cannot be executed, its command line or
	// prompt file could not be made), "" when it was started.
	NotStarted string
	// Duration is the wall-clock time of the run, all attempts included.
	Duration time.Duration
	// Usage holds this run's token counts and cost when the CLI reports
	// them. Where the CLI reports running totals over a resumed
	// conversation (Codex CLI's tokens, Claude Code's cost), it is the
	// difference from Request.TotalsBefore; without those, the total, and
	// a note says so.
	Usage *Usage
	// Totals is the running total the CLI reported, for agents that report
	// one (nil for the others): keep it for the next run's
	// Request.TotalsBefore.
	Totals *Usage
	// Message is what the agent produced, as content blocks for the run's
	// transcript: read from the whole output by the presets whose CLI
	// prints JSON (claude and codex line by line, past the Stdout cap),
	// otherwise the reply, or the captured output, as one text block; with
	// Request.OnOutput, the captured output as the blocks it was handed
	// over in (then, for a command's JSON output, the reply).
	// Truncated is set when blocks may be missing because output was cut.
	// Nil when the agent produced nothing (it never started).
	Message *transcript.AssistantMessage
	// Stdout is the agent's standard output, at most Runner.MaxStdout bytes.
	Stdout []byte
	// StdoutBytes counts all bytes the agent wrote to standard output.
	StdoutBytes int64
	// StdoutTruncated reports that Stdout holds only the first bytes.
	StdoutTruncated bool
	// Stderr is the tail of the agent's standard error.
	Stderr string
	// StderrTruncated reports that Stderr lost its beginning.
	StderrTruncated bool
	// Notes are things worth logging that did not fail the run, such as a
	// resume handle that could not be read.
	Notes []string
	// Questions are the calls the run ended holding for the user's answer
	// (permissions ask: a Claude Code turn that stopped with
	// tool_deferred), which the caller writes down as questions; nil when
	// none. Calls an ACP agent asked about while it ran went to
	// Request.Ask instead.
	Questions []question.Call
}

// Restart records why a run started a fresh conversation.
type Restart struct {
	// Handle is the resume handle or session id the agent refused.
	Handle string
	// Reason is what the agent said, shortened.
	Reason string
}

// Usage is the token use and cost of a run as the CLI reported it: the
// transcript's own type, so a run's usage is recorded as it was read.
type Usage = transcript.Usage
