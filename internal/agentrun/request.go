package agentrun

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/transcript"
)

// FiredBy says what made knotd look at the strand: the Fired-By line of the
// Event Context.
type FiredBy string

// The closed set of FiredBy values.
const (
	FiredByWatch    FiredBy = "watch"    // a file system event while watching
	FiredByOnce     FiredBy = "once"     // a knotd --once pass
	FiredByCatchUp  FiredBy = "catch-up" // the catch-up pass at startup
	FiredByRescan   FiredBy = "rescan"   // a rescan after an overflow, or --poll
	FiredByUser     FiredBy = "user"     // the user asked: knotd run, knotd retry, the console
	FiredByAnswer   FiredBy = "answer"   // the user answered a question the run before held: the turn continues
	FiredBySchedule FiredBy = "schedule" // a schedule the note carries fell due (event Scheduled)
)

// Valid reports whether f is one of the FiredBy values.
func (f FiredBy) Valid() bool {
	switch f {
	case FiredByWatch, FiredByOnce, FiredByCatchUp, FiredByRescan, FiredByUser, FiredByAnswer, FiredBySchedule:
		return true
	}
	return false
}

// Request is everything one run needs. The vault builds it; Run does not
// read the strand, its tie-off or any state itself.
type Request struct {
	// RunID identifies the run (a UUID v7); it reaches the agent as
	// KNOT_RUN_ID.
	RunID string
	// Vault is the absolute path of the vault root, the agent's working
	// directory.
	Vault string
	// StateDir is the vault's folder in knotd's state directory, where a
	// preset keeps files of its own that are the machine's, never the
	// vault's (the llm preset's logs databases). The llm preset needs it.
	StateDir string
	// Event is the settled event. Event.Strand.Content is the strand's
	// current content (unused for Deleted).
	Event strand.Event
	// Previous is the strand's last processed content, the "before" side of
	// the Changes diff and the content shown for Deleted. nil means it is
	// not known (an empty slice is an empty file).
	Previous []byte
	// TieOff holds the raw texts of the newest tie-off sections, oldest
	// first. The caller should pass only the last few; Run uses at most
	// Limits.TieOffSections of them and counts the rest as omitted.
	TieOff []string
	// TieOffOmitted counts the older sections the caller left out of TieOff.
	TieOffOmitted int
	// Session is the strand's session UUID (knot_session).
	Session string
	// Resume is the agent's resume handle from the last run (knot_resume),
	// empty when there is none: the run then starts a new conversation.
	Resume string
	// SessionAnswered reports that a turn of Session went through before
	// (its tie-off has a section of it that is not a failure): a command
	// that keeps its conversation under the session ({session}, no
	// resume_command), and has no handle to resume, continues it.
	SessionAnswered bool
	// TotalsBefore is the Result.Totals of the run that last continued the
	// conversation Resume names, nil when unknown: for an agent that
	// reports running totals, this run's own use is its total minus these.
	TotalsBefore *Usage
	// Continues reports that the conversation Resume names (or, for a
	// command that keeps its conversation under the session, Session)
	// is the one that answered Previous, in this agent: a turn that
	// continues it is given the change since that answer, not the whole
	// note and the tie-off's sections, which it already holds (unless
	// the agent's resume_prompt is whole). The caller sets it.
	Continues bool
	// LastContext is how many tokens the context of the conversation
	// Resume names held at its last turn (Result.ContextTokens), 0 when
	// unknown; LastContextWindow the context size the agent reported
	// then. Past the agent's context limit (max_context), the run starts
	// a new conversation instead of continuing it.
	LastContext, LastContextWindow int64
	// Turn is 1 for the first run of the strand and counts up from there.
	Turn int
	// FiredBy says what triggered the run.
	FiredBy FiredBy
	// Schedule is, for a Scheduled event, the schedule that fired and the
	// occurrences the run stands for (the Event Context's Schedule, Due
	// and Late lines); nil for any other event, and for the turn of a
	// scheduled run that goes on after the user answered its question.
	Schedule *Occurrence
	// Agent is the agent to run.
	Agent Agent
	// Model overrides Agent.Model (a strand's knot_model). It must pass
	// ValidateModel.
	Model string
	// MaxCostUSD, when positive, caps the run's spend for the CLIs that
	// take a cap (claude --max-budget-usd); the others ignore it.
	MaxCostUSD float64
	// Now is the time written on the Now line; zero means Runner.Now().
	Now time.Time
	// OnStart, when set, is called on Run's goroutine just before each
	// attempt's agent process starts, so that a caller can record what is
	// about to run (the vault writes run.started and message.user to the
	// run's transcript) before the agent does anything. A run whose agent
	// could not continue its conversation makes a second attempt, and
	// OnStart is called again with Try 2. An attempt that fails before its
	// process could start (a prompt file that cannot be written, a command
	// line that cannot be built) does not call it. For the built-in digest,
	// which reads no prompt, it is called once, with no argv and the prompt
	// a command agent would have been given ("" if that cannot be built).
	// OnStart must return quickly: the agent waits for it.
	OnStart func(Start)
	// OnOutput, when set, receives the agent's content blocks while it
	// runs. For the presets whose CLI streams them (claude, codex, gemini)
	// and protocol: acp commands, each call carries the blocks that became
	// final (they can no longer change), in order, as a message in the
	// CLI's format. For the others
	// (a command, llm, ollama), the standard output the Result keeps, as
	// it comes: text-only text blocks in FormatText, each handed over at
	// most a quarter of a second after it was printed, cut after a line
	// (or a space) where it can be. The vault writes them to the run's
	// transcript as they come, so that a run can be watched as it happens.
	// The blocks of an attempt are the first ones of its Result.Message.
	// It is called on the goroutine that reads the agent's output, on a
	// timer's, or (an ACP agent's file system calls) on the goroutine that
	// answers them, never two calls at once, never at the same time as
	// OnStart, never after the attempt's process is done; it must return
	// quickly: the agent's output waits for it.
	OnOutput func(transcript.AssistantMessage)
	// FS is the file system an ACP agent (protocol: acp) is offered: nil
	// offers none. Every call goes through the vault, which refuses what
	// the agent may not read or write. Reading is offered whenever FS is
	// set, writing only at permissions edit or full; every call is in the
	// run's transcript as a tool call of its own.
	FS FileSystem
	// Answers are the user's answers to this note's questions that the run
	// may apply (permissions ask): an approved call runs, a denied one is
	// refused with the user's reason. Each applies to its call only
	// (question.Answer.Applies).
	Answers []question.Answer
	// Continuing reports that the run continues a turn that ended holding
	// a call, now answered (Answers holds the answer): Resume names that
	// turn's conversation. A Claude Code turn resumes with an empty
	// prompt; other agents are told the answer in the Event Context.
	Continuing bool
	// Ask, when set, is called by an agent that asks for permission while
	// it runs (ACP's session/request_permission) for a call its
	// permissions ask hold: the caller writes the question down, tells the
	// user, and waits for an answer up to its bound. It returns the answer
	// and true, or false when none came in time: the call is then refused
	// for now, with a reason the agent sees, and the question stays open.
	// It is never called for a call that Answers already decides.
	Ask func(ctx context.Context, c question.Call) (question.Answer, bool)
	// Hook is the argv prefix of knotd's hook command ("knotd", "hook"),
	// which the claude preset at permissions ask has Claude Code run for
	// each tool call; empty means the running executable's "hook".
	Hook []string
}

// Start is what Request.OnStart is told about an attempt that is about to
// start.
type Start struct {
	// Try is 1 for the first attempt and 2 for the one that starts a fresh
	// conversation after the agent could not continue its own.
	Try int
	// Argv is the command line about to run; nil for the digest.
	Argv []string
	// Prompt is the whole prompt the agent is given.
	Prompt string
	// Restarted is set on a second attempt: why the first could not
	// continue the conversation.
	Restarted *Restart
}

// ErrBadRequest is wrapped by every error about a malformed Request.
var ErrBadRequest = errors.New("agentrun: bad request")

// validate checks the request and its agent.
func (req *Request) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
	}
	if err := req.Agent.Validate(); err != nil {
		return err
	}
	switch {
	case !req.Event.Type.Valid():
		return bad("invalid event type %v", req.Event.Type)
	case !filepath.IsAbs(req.Vault):
		return bad("vault %q is not an absolute path", req.Vault)
	case req.Turn < 1:
		return bad("turn %d (the first turn is 1)", req.Turn)
	case !req.FiredBy.Valid():
		return bad("fired-by %q is not one of watch, once, catch-up, rescan, user, answer, schedule", req.FiredBy)
	case req.Schedule != nil && req.Event.Type != strand.Scheduled:
		return bad("a schedule's occurrence on a %v event (only a Scheduled run stands for one)", req.Event.Type)
	case req.Schedule != nil && (req.Schedule.Due.IsZero() || req.Schedule.Schedule == "" || req.Schedule.Count < 1):
		return bad("a scheduled run's occurrence needs its schedule, due time and count")
	case req.TieOffOmitted < 0:
		return bad("negative omitted tie-off count %d", req.TieOffOmitted)
	}
	if err := strand.ValidateRel(req.Event.Strand.Path); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if _, err := uuid.Parse(req.Session); err != nil || len(req.Session) != 36 {
		return bad("session %q is not a UUID", req.Session)
	}
	if err := checkArgValue("run id", req.RunID, ErrBadRequest); err != nil {
		return err
	}
	if req.Resume != "" {
		if err := checkArgValue("resume handle", req.Resume, ErrBadRequest); err != nil {
			return err
		}
	}
	if req.Model != "" {
		if err := ValidateModel(req.Model); err != nil {
			return err
		}
	}
	return nil
}

// continued names the conversation the run was asked to continue.
func (req *Request) continued() string {
	if req.Resume != "" {
		return "conversation " + req.Resume
	}
	return "session " + req.Session
}

// model is the model the run uses: the strand's override, else the agent's.
func (req *Request) model() string {
	if req.Model != "" {
		return req.Model
	}
	return req.Agent.Model
}
