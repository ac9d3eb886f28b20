package pipeline

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/vault/internal/budget"
)

// Host is what the pipeline asks of the vault whose strands it takes
// through their steps. It is asked each time the pipeline needs it: the
// vault's state store, state folder and answering device are known only
// once the vault is open, the configuration is replaced when it is
// reloaded, and tests replace the clock, the logger and the seams.
type Host interface {
	// The vault, its configuration and its state.
	Root() string                           // the vault's absolute path
	FS() *os.Root                           // the vault, opened: every file the pipeline reads or writes in it goes through it
	Folder() statedir.Folder                // the vault's folder in the state directory (transcripts, rescued saves)
	Config() *config.Config                 // the configuration in force
	Store() *state.Store                    // the state store
	Dry() bool                              // --dry-run: nothing is written, neither files nor state
	Watching() bool                         // the daemon watches: a failure that may pass is tried again, not reported and left
	Budget() *budget.Budget                 // the day's budget
	Now() time.Time                         // the clock of sections and records
	Log() *slog.Logger                      // where the pipeline says what it does
	WarnOnce(path, msg string, args ...any) // a warning said once per path and message
	NoticeOnce(key string, say func())      // say called once per key while the condition lasts

	// The strands on disk, as the vault's reconciler sees them.

	// ReadStrand reads the strand rel, up to limit bytes (tooBig: more;
	// h is then the whole file's hash).
	ReadStrand(rel string, limit int64) (content []byte, h state.Hash, info os.FileInfo, tooBig bool, err error)
	// LstatStrand looks at the strand path rel, without following a link.
	LstatStrand(rel string) (fs.FileInfo, Presence, error)
	// SameContent reports whether the strand rel's content has hash h.
	SameContent(rel string, h state.Hash) (bool, error)
	// Stamp is the stamp a record keeps of info.
	Stamp(info fs.FileInfo) state.Stamp
	// Fold folds the sync conflict copies of the strand rel and of its
	// tie-off into them.
	Fold(rel string)
	// Move moves the record (and tie-off) of a strand that moved from
	// from to to, which the pipeline holds; it reports whether it did.
	Move(from, to string) (bool, error)
	// ScopeOf is what the configuration's rules say of the path rel.
	ScopeOf(rel string) config.Scope
	// ScopedAgent resolves the agent a strand names (name), within what
	// its rules sc allow, to the name reports use and the agent.
	ScopedAgent(name string, sc config.Scope) (string, agentrun.Agent, error)
	// OwnWrote says that knotd wrote the strand rel, leaving stamp st:
	// while it is so, the watcher does not take it for a change.
	OwnWrote(rel string, st state.Stamp)

	// The work under way.
	Claim(rel string)                     // wait until the strand path is free, and hold it
	Release(rel string)                   // free the strand path
	Started(r control.Running)            // a run started (for status)
	Done(rel string)                      // the strand's run is over
	AnswersHold(ctx context.Context) bool // this device still answers the vault, after a run
	NewAgentFS(a agentrun.Agent) AgentFS  // the file system a run of a gets
	Runner() AgentRunner                  // what runs the agents

	Questions
	Seams
}

// Questions are the calls agents held for the user's answer (permissions:
// ask), which the vault keeps (its state, the tie-off) and answers; the
// pipeline calls them with the strand claimed.
type Questions interface {
	// QuestionsBefore is called as the pipeline takes the strand rel up:
	// it applies the answers given meanwhile (in the note's knot_answer,
	// by knotd approve|deny, on another device), writes their sections,
	// and returns the answered question whose continuing run is due (nil
	// when none is).
	QuestionsBefore(rel string) (*state.Question, error)
	// WithdrawQuestions withdraws the strand's waiting questions before a
	// change of it runs: the agent gets the change instead.
	WithdrawQuestions(rel string) error
	// Asked writes down and records the calls the run ended holding, once
	// its own section is in the tie-off; the run's questions that are
	// still waiting (asked while it ran) learn its resume handle.
	Asked(rel string, run Asking, calls []question.Call)
	// AskFunc is the run's agentrun.Request.Ask: it writes the question
	// down at once and waits for its answer until ctx ends.
	AskFunc(rel string, run Asking) func(context.Context, question.Call) (question.Answer, bool)
	// Continued says that the continuing run of question id is journaled:
	// the question is done.
	Continued(id string) error
}

// Asking is the run that asked a question, as the question records it.
type Asking struct {
	RunID, Agent, Resume, Hash string
	Event                      strand.EventType
}

// Presence is what Host.LstatStrand found at a strand path.
type Presence uint8

const (
	// Absent: nothing is there, or something that is not a regular file.
	Absent Presence = iota
	// Present: a regular file the ignore rules keep.
	Present
	// Ignored: the ignore rules leave the path out.
	Ignored
)

// AgentFS is the file system a run's agent reads and writes the vault
// through (agentrun.Request.FS); Close settles its writes once the agent is
// done.
type AgentFS interface {
	agentrun.FileSystem
	Close()
}

// AgentRunner runs one agent invocation (an agentrun.Agent is a configured
// agent; this runs one). agentrun.Runner satisfies it; tests may
// substitute their own.
type AgentRunner interface {
	Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error)
}

// Seams are the daemon's test seams the pipeline calls: told what it did
// (Journaled, Completed), and failing the steps the operating system can
// fail (an error returned is that step's error).
type Seams interface {
	Journaled(runID string) // a run's journal entry is durable
	Completed(runID string) // a run's record is committed
	Syncing(dir string) error
	Journaling(runID string) error
	Appending(runID string) error
	Completing(runID string) error
}
