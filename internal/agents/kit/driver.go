package kit

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/transcript"
)

// PromptMode says how an agent receives its prompt (agentrun.PromptMode).
type PromptMode string

// The prompt modes. The zero value means PromptStdin.
const (
	// PromptStdin writes the prompt to the command's standard input.
	PromptStdin PromptMode = "stdin"
	// PromptArg passes the prompt as one argv element: where the command
	// has a "{prompt}" element, else as the last argument. knotd never
	// inserts "--" (it cannot know that the program honours it): a prompt
	// that would start an argument with "-" makes the run fail, unless the
	// command has a "--" element before it. Prompts over MaxArgPrompt
	// bytes fail too.
	PromptArg PromptMode = "arg"
	// PromptFile writes the prompt to a 0600 temporary file, removed after
	// the run, whose path replaces "{prompt_file}" or is the last argument.
	PromptFile PromptMode = "file"
)

// Permissions says what an agent CLI may do on its own during a run, with
// nobody there to approve it. Each preset maps it to its CLI's own flags.
type Permissions string

// The permission levels. The zero value means PermReadOnly.
const (
	// PermReadOnly lets the agent read files but not change any or run
	// commands that could: the default.
	PermReadOnly Permissions = "read-only"
	// PermEdit also lets the agent create and edit files in the vault.
	PermEdit Permissions = "edit"
	// PermFull lets the agent do anything its CLI can, without asking:
	// edit any file and run any command.
	PermFull Permissions = "full"
	// PermAsk lets the agent read, and holds every other call (an edit, a
	// command, the network) as a question for the user: the call runs
	// once the user approves it (package question).
	PermAsk Permissions = "ask"
)

// Usage is the token use and cost of a run.
type Usage = transcript.Usage

// Attempt is one invocation of an agent, as a Driver sees it. A run has one
// attempt, or two when the agent could not continue its conversation and a
// fresh one is started.
type Attempt struct {
	// Program is the argv prefix that starts the agent: the agent's
	// command, or the driver's DefaultProgram.
	Program []string
	Model   string
	// Session is the id a new conversation is created with, where the
	// CLI lets knotd choose it (claude --session-id): the strand's
	// session, or a fresh UUID after a restart.
	Session string
	// Resume is the handle of the conversation to continue, "" for a new
	// conversation.
	Resume string
	// Instructions go to the CLI's system-prompt flag ("" when the driver
	// writes them into the prompt instead, or when there are none).
	Instructions string
	Prompt       string
	// Permissions is the agent's permission level (never empty).
	Permissions Permissions
	// MaxCostUSD is the run's cost cap, 0 for none.
	MaxCostUSD float64
	// StateDir is the vault's folder in knotd's state directory
	// (agentrun.Request.StateDir), where a driver may keep files of its
	// own: the machine's, never the vault's.
	StateDir string
	// StrandSession is the strand's session UUID (knot_session), which
	// Session leaves after a restart.
	StrandSession string
	// Answers are the user's answers to this note's questions that the
	// attempt may apply (at permissions ask): a held call whose hash an
	// approval names runs, one a denial names is refused with its reason.
	Answers []question.Answer
	// Continuing reports that the attempt continues a turn that ended
	// holding a call (Parsed.Held) now that the call is answered: Resume
	// names that turn's conversation, and Prompt is empty.
	Continuing bool
	// Hook is the argv prefix of knotd's own hook command (knotd hook),
	// which a driver may have its CLI run to decide a held call.
	Hook []string
	// Vault is the absolute path of the vault root, the agent's working
	// directory.
	Vault string
}

// Parsed is what a driver read from an agent's output.
type Parsed struct {
	Reply  string
	Handle string
	Usage  *Usage
	// AgentErr is the agent's own report of a failure (an is_error result,
	// a turn.failed event, an error object), empty when it reported none.
	AgentErr string
	Notes    []string
	// Message is the output as content blocks for the transcript; nil when
	// the parser read none (the reply then stands as text).
	Message *transcript.AssistantMessage
	// Context is how many tokens the model's context held at the turn's
	// last model call, Window the context size the output reports; 0 when
	// the output does not say (Decoded.ContextTokens, ContextWindow).
	Context, Window int64
	// Held are the calls the turn ended holding for the user's answer (a
	// Claude Code turn that stopped with tool_deferred), nil when none.
	Held []question.Call
}

// Parser reads one attempt's output after the agent exited. stdout is the
// captured standard output, cut to the runner's cap when truncated is set.
// An error means the output could not be read at all.
type Parser interface {
	Finish(stdout []byte, truncated bool, stderr string) (Parsed, error)
}

// LineParser is a Parser that also wants every line of standard output as
// it arrives (JSON lines), so it sees all of it however long. Watch, called
// before the first line, names the function that receives content blocks
// as they become final.
type LineParser interface {
	Parser
	Line(b []byte)
	Watch(live func(transcript.AssistantMessage))
}

// Driver knows how to run one kind of agent: its command line and how to
// read its output.
type Driver interface {
	// Delivery is how the prompt reaches the agent.
	Delivery() PromptMode
	// InlineInstructions reports that instructions go before the Event
	// Context because the CLI has no system-prompt flag.
	InlineInstructions() bool
	// Resumes reports whether the agent continues a conversation from a
	// resume handle.
	Resumes() bool
	// DefaultProgram is the program name when the agent's command is
	// empty.
	DefaultProgram() string
	// Argv returns the full command line of one attempt.
	Argv(a *Attempt) ([]string, error)
	// Parser returns a fresh parser for one attempt's output.
	Parser() Parser
}

// SessionRecoverer is a Driver that can tell, from a failed attempt, that
// the CLI refused to continue or create the conversation, so that the run
// may start a fresh one (once).
type SessionRecoverer interface {
	SessionLost(exitCode int, p Parsed, stderr string) (reason string, lost bool)
}

// Totaler is a Driver whose CLI reports, for a resumed conversation,
// running totals over the whole conversation rather than the turn's own
// use, for some fields: Turn returns the turn's use from the total reported
// now and the one reported at the end of the turn before.
type Totaler interface {
	Turn(total, before Usage) Usage
}

// TurnContexter is a Totaler whose CLI reports no context size, only the
// tokens of the turn: TurnContext returns the context size to keep from
// the turn's own use (Turn's result), 0 for none. The runner asks only
// when that use is the turn's: a new conversation's, or a resumed one's
// with the totals before known.
type TurnContexter interface {
	TurnContext(turn Usage) int64
}

// ContextDefaulter is a Driver whose CLI runs models of a known context
// size: its max_context when the agent sets none.
type ContextDefaulter interface {
	// MaxContext is the default max_context in tokens, 0 for none.
	MaxContext() int64
}

// FailureExplainer is a Driver that recognizes failures its CLI reports
// for reasons knotd's configuration can fix, and says what to do.
type FailureExplainer interface {
	// Explain returns advice for a failed attempt, "" when it has none.
	Explain(a *Attempt, exitCode int, stderr string) string
}

// Limiter is a Driver with prompt limit defaults of its own (zero fields
// mean the package defaults).
type Limiter interface {
	Limits() Limits
}

// Preparer is a Driver with a step before each attempt (creating a
// directory it needs). An error fails the attempt without running it.
type Preparer interface {
	Prepare(a *Attempt) error
}

// HeldResumer is a Driver whose CLI continues a turn that ended holding a
// call (Parsed.Held) by resuming its conversation with an empty prompt
// (Claude Code's deferred tool call): an attempt with Continuing and a
// Resume handle gets no prompt, and the CLI decides the held call again.
type HeldResumer interface {
	ResumesHeld() bool
}

// Finisher is a Driver with a step after a successful attempt, such as
// asking the CLI for the conversation id it just used: it may set p's
// Handle, Usage and Notes. run starts a helper process with the attempt's
// environment and working directory.
type Finisher interface {
	Finish(ctx context.Context, a *Attempt, p *Parsed, run func(ctx context.Context, argv []string) Proc)
}

// Proc is how a helper process a Finisher ran ended.
type Proc struct {
	// OK reports that it started and exited with status 0.
	OK     bool
	Stdout []byte
	Stderr string
	// Status says how it ended, for messages: "exit status 2", "could not
	// start: …", "signal: killed".
	Status string
}

// ErrNoOutput is the parse error of an agent that printed nothing.
var ErrNoOutput = errors.New("no output")

// BlockStream decodes a CLI's JSON lines with the agent's decoder as they
// arrive, and hands each block to live once final. It is the part the
// streaming presets' parsers share.
type BlockStream struct {
	d     Decoding
	dec   *Decoder
	live  func(transcript.AssistantMessage)
	lines int
}

// NewBlockStream returns a stream read with d.
func NewBlockStream(d Decoding) BlockStream {
	var n Normalizer
	if d.New != nil {
		n = d.New()
	}
	return BlockStream{d: d, dec: NewDecoder(d.Format, n)}
}

// Watch names the function that receives blocks as they become final.
func (s *BlockStream) Watch(live func(transcript.AssistantMessage)) { s.live = live }

// Line reads one line of output.
func (s *BlockStream) Line(b []byte) {
	s.lines++
	if blocks := s.dec.Line(b); len(blocks) > 0 && s.live != nil {
		s.live(transcript.AssistantMessage{Format: s.d.Format, Blocks: blocks})
	}
}

// Lines is how many lines were handed to Line.
func (s *BlockStream) Lines() int { return s.lines }

// Decoded ends the stream. When no line was handed over (a caller that
// only has the captured output), it decodes stdout whole.
func (s *BlockStream) Decoded(stdout []byte) Decoded {
	if s.lines == 0 {
		var n Normalizer
		if s.d.New != nil {
			n = s.d.New()
		}
		return Decode(s.d.Format, n, stdout)
	}
	return s.dec.Finish(stdout)
}

// ansiEscape matches terminal escape sequences (colours, cursor moves).
var ansiEscape = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)

// FirstLine returns the first non-blank line of s without terminal escapes
// or control characters, trimmed and cut to max bytes, for a one-line human
// reason.
func FirstLine(s string, max int) string {
	s = ansiEscape.ReplaceAllString(s, "")
	for _, l := range strings.Split(s, "\n") {
		l = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return ' '
			}
			return r
		}, l)
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > max {
				cut := max
				for cut > 0 && !utf8.RuneStart(l[cut]) {
					cut--
				}
				l = l[:cut] + "…"
			}
			return strings.ToValidUTF8(l, "\uFFFD")
		}
	}
	return ""
}
