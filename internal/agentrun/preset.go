package agentrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/knotd/knotd/internal/agentrun/internal/proc"
	"github.com/knotd/knotd/internal/agents"
	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/transcript"
)

// attempt is one invocation of an agent. A run has one attempt, or two when
// the agent could not continue its conversation and a fresh one is started.
type attempt struct {
	req *Request
	// program is the argv prefix that starts the agent: Agent.Command, or
	// the preset's default program name.
	program []string
	model   string
	// session is the id a new conversation is created with, where the CLI
	// lets knotd choose it (claude --session-id): the strand's session, or
	// a fresh UUID after a restart.
	session string
	// resume is the handle of the conversation to continue, "" for a new
	// conversation.
	resume string
	// continues reports that a driver that is handed no resume handle
	// continues the conversation all the same (a command that keeps it
	// under the session).
	continues bool
	// fresh is set when the turn starts a new conversation instead of
	// continuing one past its context limit: why (see freshStart).
	fresh string
	// instructions go to the CLI's system-prompt flag ("" when the driver
	// writes them into the prompt instead, or when there are none).
	instructions string
	prompt       string
	promptFile   string // the prompt's temporary file in file mode
}

// parsed is what a driver read from an agent's output.
type parsed struct {
	reply  string
	handle string
	usage  *Usage
	// context is how many tokens the model's context held at the turn's
	// last model call, window the context size the agent reported; 0 when
	// it reported none.
	context, window int64
	// agentErr is the agent's own report of a failure (an is_error result,
	// a turn.failed event, an error object), empty when it reported none.
	agentErr string
	notes    []string
	// message is the output as content blocks for the transcript; nil
	// when the parser read none (the reply then stands as text).
	message *transcript.AssistantMessage
	// held are the calls the turn ended holding for the user's answer.
	held []question.Call
	// lost is set by a conversation that found the CLI refusing the
	// conversation it was asked to continue: what the CLI said.
	lost string
	// noted tells the lines of standard error that the notes already
	// explain (nil: none): a failure's reason does not quote them.
	noted func(line string) bool
}

// outputParser reads one attempt's output after the agent exited. stdout
// is the captured standard output, cut to the runner's cap when truncated
// is set. An error means the output could not be read at all.
type outputParser interface {
	finish(stdout []byte, truncated bool, stderr string) (parsed, error)
}

// lineParser is an outputParser that also wants every line of standard
// output as it arrives (JSON lines), so it sees all of it however long.
// watch, called before the first line, names the function that receives
// content blocks as they become final (Request.OnOutput).
type lineParser interface {
	outputParser
	line(b []byte)
	liveParser
}

// liveParser is a parser that hands content blocks to live as they become
// final, while the agent runs (Request.OnOutput).
type liveParser interface {
	watch(live func(transcript.AssistantMessage))
}

// blockStream decodes a CLI's JSON lines with its agent's decoder (agents/) for
// its format as they arrive, and hands each block to live once final. It is
// the part the streaming presets' parsers share.
type blockStream struct {
	format transcript.Format
	dec    *kit.Decoder
	live   func(transcript.AssistantMessage)
	lines  int
}

func newBlockStream(format transcript.Format) blockStream {
	dec, err := agents.NewDecoder(format)
	if err != nil {
		panic("agentrun: " + err.Error()) // the presets name formats the decoder reads
	}
	return blockStream{format: format, dec: dec}
}

func (s *blockStream) watch(live func(transcript.AssistantMessage)) { s.live = live }

func (s *blockStream) line(b []byte) {
	s.lines++
	if blocks := s.dec.Line(b); len(blocks) > 0 && s.live != nil {
		s.live(transcript.AssistantMessage{Format: s.format, Blocks: blocks})
	}
}

// driver knows how to run one kind of agent.
type driver interface {
	// delivery is how the prompt reaches the agent.
	delivery() PromptMode
	// inlineInstructions reports that instructions go before the Event
	// Context because the CLI has no system-prompt flag.
	inlineInstructions() bool
	// resumes reports whether the agent continues a conversation from a
	// resume handle.
	resumes() bool
	// defaultProgram is the program name when Agent.Command is empty.
	defaultProgram() string
	// argv returns the full command line of one attempt.
	argv(a *attempt) ([]string, error)
	// parser returns a fresh parser for one attempt's output.
	parser() outputParser
	// limits are the driver's own prompt limit defaults (zero fields mean
	// the package defaults).
	limits() Limits
}

// sessionRecoverer is a driver that can tell, from a failed attempt, that
// the CLI refused to continue or create the conversation, so that the run
// may start a fresh one (once).
type sessionRecoverer interface {
	sessionLost(exitCode int, p parsed, stderr string) (reason string, lost bool)
}

// totaler is a driver whose CLI reports, for a resumed conversation,
// running totals over the whole conversation rather than the turn's own
// use, for some fields: turn returns the turn's use from the total
// reported now and the one reported at the end of the turn before.
type totaler interface {
	turn(total, before Usage) Usage
}

// turnContexter is a totaler whose CLI reports no context size: its
// context is measured from the turn's own use (see perTurn), 0 for none.
type turnContexter interface {
	turnContext(turn Usage) int64
}

// finisher is a driver with a step after a successful attempt, such as
// asking the CLI for the conversation id it just used. run starts a helper
// process with the attempt's environment and working directory.
type finisher interface {
	finish(ctx context.Context, a *attempt, p *parsed, run func(ctx context.Context, argv []string) proc.Result)
}

// continuer is a driver that continues a conversation without a resume
// handle of its own: continues reports whether req's run does.
type continuer interface {
	continues(req *Request) bool
}

// enver is a driver that sets environment variables of its own for the
// agent, over knotd's and the agent's (Agent.Env).
type enver interface {
	env() [][2]string
}

// heldResumer is a driver whose CLI continues a turn that ended holding a
// call by resuming it with an empty prompt (kit.HeldResumer).
type heldResumer interface {
	resumesHeld() bool
}

// resumesHeld reports whether a's attempt continues a held call the
// driver's way: Request.Continuing, resuming a conversation, with a
// heldResumer.
func resumesHeld(d driver, a *attempt) bool {
	h, ok := d.(heldResumer)
	return ok && a.req.Continuing && a.resume != "" && h.resumesHeld()
}

// preparer is a driver with a step before each attempt (creating a
// directory it needs).
type preparer interface {
	prepare(a *attempt) error
}

// newDriver returns the driver for an agent of the given kind (its preset,
// or "" for a generic command). Digest has no driver: it runs in-process.
func newDriver(a *Agent, kind string) driver {
	if d := agents.Driver(kind); d != nil {
		return newKitDriver(d)
	}
	if p := acpPresets[kind]; p != nil {
		return acpDriver{preset: p}
	}
	if a.acp() {
		return acpDriver{}
	}
	return &commandDriver{agent: a}
}

// program returns the argv prefix for an attempt.
func program(a *Agent, d driver) []string {
	if len(a.Command) > 0 {
		return a.Command
	}
	return []string{d.defaultProgram()}
}

// jsonValues decodes every JSON value in b in order (one document, or JSON
// lines) and calls fn with each, numbers kept as json.Number. A line that is
// not JSON (a warning a CLI printed) is skipped; skipped counts them. The
// work is bounded: after a failure decoding resumes at the next line, and
// once the decoders have read jsonScanFactor times len(b) bytes (output
// built to make every resumption rescan the rest) the scan stops.
func jsonValues(b []byte, fn func(v any)) (skipped int) {
	budget := &countingReader{left: jsonScanFactor*len(b) + 64<<10}
	for pos := 0; pos < len(b) && budget.left > 0; {
		budget.r = bytes.NewReader(b[pos:])
		dec := json.NewDecoder(budget)
		dec.UseNumber()
		for {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) {
				return skipped
			}
			if err != nil {
				skipped++
				// Skip the rest of the line where the bad value starts.
				bad := pos + int(dec.InputOffset())
				for bad < len(b) && strings.IndexByte(" \t\r\n", b[bad]) >= 0 {
					bad++
				}
				nl := bytes.IndexByte(b[bad:], '\n')
				if nl < 0 {
					return skipped
				}
				pos = bad + nl + 1
				break
			}
			fn(v)
		}
	}
	return skipped
}

// jsonScanFactor bounds jsonValues' reading to this many times its input.
const jsonScanFactor = 4

// countingReader reads from r until left bytes have been read in all.
type countingReader struct {
	r    *bytes.Reader
	left int
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.EOF
	}
	n, err := c.r.Read(p[:min(len(p), c.left)])
	c.left -= n
	return n, err
}

// Program returns the program the agent runs: the first element of its
// command, or its preset's own program name ("claude", "codex", …); ""
// for the digest, which runs in knotd.
func (a *Agent) Program() string {
	if a.Preset == PresetDigest {
		return ""
	}
	return program(a, newDriver(a, a.Preset))[0]
}

// errNoOutput is the parse error of an agent that printed nothing.
var errNoOutput = kit.ErrNoOutput
