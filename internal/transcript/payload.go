package transcript

import (
	"time"

	"github.com/knotd/knotd/internal/strand"
)

// Started is the payload of run.started, the first line of every
// transcript.
type Started struct {
	// Strand is the vault-relative path of the strand.
	Strand string `json:"strand"`
	// Event is what happened to it.
	Event strand.EventType `json:"event"`
	// Agent is the configured agent's name; Preset its preset ("" for a
	// generic command); Model the model asked for, if any.
	Agent  string `json:"agent,omitempty"`
	Preset string `json:"preset,omitempty"`
	Model  string `json:"model,omitempty"`
	// Session is the strand's session UUID (knot_session).
	Session string `json:"session,omitempty"`
	// Resume is the resume handle the run continues, empty for a new
	// conversation.
	Resume string `json:"resume,omitempty"`
	// Turn is 1 for the strand's first run.
	Turn int `json:"turn,omitempty"`
	// FiredBy is watch, once, catch-up or rescan.
	FiredBy string `json:"fired_by,omitempty"`
	// Argv is the agent's command line. A Recorder masks it before writing
	// (see Masker.Argv).
	Argv []string `json:"argv,omitempty"`
}

// UserMessage is the payload of message.user.
type UserMessage struct {
	// Prompt is the whole prompt as the agent received it, Event Context
	// block included.
	Prompt string `json:"prompt"`
}

// Format names the agent output format an assistant message was read
// from ("claude-stream-json", "codex-json", "gemini-acp", "acp", "text",
// …). Each agent's package under agents/ names its own formats and reads
// them (agents/kit's Decoder); the values are written in transcripts, so a
// value once written never changes meaning.
type Format string

// FormatText is plain text: all of it is the reply, kept as one text-only
// block (a generic command, llm, ollama, and any output with no JSON).
const FormatText Format = "text"

// AssistantMessage is the payload of message.assistant: what the agent
// produced, normalised into content blocks (see agents/kit's Decoder).
type AssistantMessage struct {
	// Format is the output format the blocks were read from.
	Format Format `json:"format,omitempty"`
	// Blocks are the content blocks in the order the CLI produced them.
	Blocks []Block `json:"blocks"`
	// Truncated reports that knotd kept only the beginning of the CLI's
	// output, so later blocks are missing.
	Truncated bool `json:"truncated,omitempty"`
	// Notes say what the normaliser could not read or left out.
	Notes []string `json:"notes,omitempty"`
}

// Finished is the payload of run.finished: how the agent's run ended.
type Finished struct {
	// Outcome is ok, failed, timeout or canceled.
	Outcome string `json:"outcome"`
	// ExitCode is the agent's exit status; -1 when it did not exit by
	// itself, was never started, or ran in-process.
	ExitCode int `json:"exit_code"`
	// Duration is the run's wall-clock time.
	Duration time.Duration `json:"duration_ns"`
	// Reason explains an outcome other than ok.
	Reason string `json:"reason,omitempty"`
	// Resume is the resume handle the agent reported.
	Resume string `json:"resume,omitempty"`
	// Usage is the token use and cost the CLI reported.
	Usage *Usage `json:"usage,omitempty"`
	// StdoutBytes counts everything the agent printed on standard output;
	// StdoutTruncated reports that knotd kept only its beginning.
	StdoutBytes     int64 `json:"stdout_bytes,omitempty"`
	StdoutTruncated bool  `json:"stdout_truncated,omitempty"`
	// Stderr is the tail of the agent's standard error; StderrTruncated
	// reports that it lost its beginning.
	Stderr          string `json:"stderr,omitempty"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
	// Notes are things worth knowing that did not fail the run.
	Notes []string `json:"notes,omitempty"`
}

// TieOff is the payload of tieoff.appended.
type TieOff struct {
	// Path is the vault-relative path of the tie-off.
	Path string `json:"path"`
	// Offset is the byte offset of the run's section in the tie-off.
	Offset int64 `json:"offset"`
	// Replaced reports that the section replaced the tie-off's content
	// (knot_mode replace) rather than being appended.
	Replaced bool `json:"replaced,omitempty"`
}

// Usage is the token use and cost of a run as the CLI reported it; zero
// fields were not reported.
type Usage struct {
	InputTokens      int64 `json:"input_tokens,omitempty"`
	OutputTokens     int64 `json:"output_tokens,omitempty"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// CostUSD is the cost in US dollars the CLI computed.
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// Add adds o to u, field by field.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CostUSD += o.CostUSD
}

// Minus returns u less o, field by field, never below zero: the use of one
// turn from two running totals.
func (u Usage) Minus(o Usage) Usage {
	return Usage{
		InputTokens:      max(u.InputTokens-o.InputTokens, 0),
		OutputTokens:     max(u.OutputTokens-o.OutputTokens, 0),
		CacheReadTokens:  max(u.CacheReadTokens-o.CacheReadTokens, 0),
		CacheWriteTokens: max(u.CacheWriteTokens-o.CacheWriteTokens, 0),
		CostUSD:          max(u.CostUSD-o.CostUSD, 0),
	}
}

// Type implements Payload.
func (Started) Type() Type { return RunStarted }

// Type implements Payload.
func (UserMessage) Type() Type { return MessageUser }

// Type implements Payload.
func (AssistantMessage) Type() Type { return MessageAssistant }

// Type implements Payload.
func (Finished) Type() Type { return RunFinished }

// Type implements Payload.
func (TieOff) Type() Type { return TieOffAppended }

func (Started) payload()          {}
func (UserMessage) payload()      {}
func (AssistantMessage) payload() {}
func (Finished) payload()         {}
func (TieOff) payload()           {}
