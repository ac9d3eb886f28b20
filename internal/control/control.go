// Package control is how the knotd commands that steer a running daemon
// (knotd status, run, retry, pause, resume, and the console) reach it: a
// local socket in the vault's folder of the state directory, never the
// network. The daemon serves a Backend on it; a Client is the same
// Backend at the other end.
//
// The protocol is one JSON request and one JSON response per connection,
// each on one line:
//
//	{"op":"status"}
//	{"op":"run","notes":["ideas/plan.md"]}
//	{"op":"retry","since":"2026-11-23T00:00:00Z"}
//	{"op":"pause","notes":["journal/today.md"],"why":"…"}
//	{"op":"resume","notes":[]}               (no notes: every paused note)
//	{"op":"copy_state"}                      (a StateCopier's: knotd --once --dry-run)
//	{"op":"reload"}                          (a Reloader's: knotd trust)
//
// answered by {"status":{…}}, {"result":{…}}, {"path":"…"} (copy_state)
// or {"files":[…]} (reload), or {"error":"…"}.
//
// The socket is a Unix domain socket (on Windows too, which has them
// since Windows 10 1803), made 0600 in a folder that is 0700: only the
// user who runs knotd can connect.
package control

import (
	"context"
	"errors"
	"time"
)

// Backend is what the daemon does for the commands.
type Backend interface {
	// Status says what the daemon is doing.
	Status(ctx context.Context) (Status, error)
	// Run answers the notes now, changed or not (paused ones too).
	Run(ctx context.Context, notes []string) (Result, error)
	// Retry runs again every note whose last run failed at or after
	// since.
	Retry(ctx context.Context, since time.Time) (Result, error)
	// Pause pauses the notes: their changes wait until they are resumed
	// (or run by hand), and are never lost.
	Pause(ctx context.Context, notes []string, why string) (Result, error)
	// Resume resumes the notes, or every paused note when notes is
	// empty; their changes made meanwhile are answered now.
	Resume(ctx context.Context, notes []string) (Result, error)
}

// StateCopier is a Backend that copies its state store for a reader
// beside it (knotd --once --dry-run while the daemon runs).
type StateCopier interface {
	// CopyState writes a consistent copy of the state store into a new
	// file only the user can read and returns its path; the caller
	// removes it.
	CopyState(ctx context.Context) (string, error)
}

// Reloader is a Backend that loads its configuration again (as on
// SIGHUP), for knotd trust.
type Reloader interface {
	// ReloadConfig loads the configuration again and returns the files
	// read; an error says why the one in force stays.
	ReloadConfig(ctx context.Context) ([]string, error)
}

// Status is what knotd status shows: the daemon, its work and its notes.
// Times are UTC.
type Status struct {
	Vault string    `json:"vault"`
	PID   int       `json:"pid"`
	Since time.Time `json:"since"`
	// Device is this device's name, DeviceID its identity.
	Device   string `json:"device"`
	DeviceID string `json:"device_id"`
	// Answering says this device answers the vault; otherwise Standby
	// says which device does, or why this one stands by.
	Answering bool   `json:"answering"`
	Standby   string `json:"standby,omitempty"`
	// Agent is the default agent.
	Agent    string    `json:"agent"`
	Running  []Running `json:"running"`
	Queued   []Queued  `json:"queued"`
	Failures []Failure `json:"failures"`
	Paused   []Paused  `json:"paused"`
	// Deferred are the notes whose changes wait for the day's budget.
	Deferred []Paused `json:"deferred"`
	Today    Totals   `json:"today"`
	// Schedules are the notes that carry a schedule, with its next time
	// (or why it cannot be used); only a running knotd says them.
	Schedules []Schedule `json:"schedules,omitempty"`
	// Now is when the status was taken (elapsed times are to it).
	Now time.Time `json:"now"`
}

// Schedule is a note's schedule: when it falls due next, and the last
// occurrence it fired; Problem says why a schedule cannot be used (the
// note is otherwise served).
type Schedule struct {
	Note     string    `json:"note"`
	Schedule string    `json:"schedule,omitempty"`
	Zone     string    `json:"zone,omitempty"`
	Next     time.Time `json:"next,omitzero"`
	Last     time.Time `json:"last,omitzero"`
	Problem  string    `json:"problem,omitempty"`
}

// Running is a run in progress.
type Running struct {
	Note    string        `json:"note"`
	RunID   string        `json:"run_id"`
	Agent   string        `json:"agent"`
	Event   string        `json:"event"`
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Queued is a note waiting for its run: FollowUp when it waits behind a
// run of its own in progress.
type Queued struct {
	Note     string `json:"note"`
	FiredBy  string `json:"fired_by"`
	FollowUp bool   `json:"follow_up,omitempty"`
}

// Failure is a note whose last run failed.
type Failure struct {
	Note   string    `json:"note"`
	RunID  string    `json:"run_id"`
	Time   time.Time `json:"time"`
	Reason string    `json:"reason,omitempty"`
	// NoRetry, when set, says why a retry would run nothing, or fail the
	// same way (the note is gone, a rule keeps it from every agent, its
	// own content is the failure): knotd retry leaves it, and the console
	// offers no Retry. Only a running knotd says it.
	NoRetry string `json:"no_retry,omitempty"`
}

// Paused is a paused note.
type Paused struct {
	Note  string    `json:"note"`
	Since time.Time `json:"since"`
	Why   string    `json:"why,omitempty"`
}

// Totals counts the runs of a day (UTC), and their tokens and cost as
// the CLIs reported them: CostUSD is the sum over the Priced runs, whose
// CLI reported a cost; the others' cost is not known. The tokens are the
// sum over the Metered runs, whose CLI reported tokens; with none, the
// day's tokens are not known (the digest, a command that says nothing).
type Totals struct {
	Runs         int     `json:"runs"`
	OK           int     `json:"ok"`
	Failed       int     `json:"failed"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Priced       int     `json:"priced_runs"`
	Metered      int     `json:"metered_runs"`
}

// Result is what a command did: the notes it acted on, and those it did
// not, each with why.
type Result struct {
	Done []string `json:"done"`
	// Did says, for a note of Done, what became of it when the command's
	// verb alone (queued, paused, resumed) would not say it: "queued
	// behind its run in progress", "already waiting", "already paused",
	// "was not paused".
	Did     map[string]string `json:"did,omitempty"`
	Refused []Refusal         `json:"refused,omitempty"`
}

// Outcome says what the command did with note, when it did not refuse
// it: Did's word for it, or verb.
func (r Result) Outcome(note, verb string) string {
	if d := r.Did[note]; d != "" {
		return d
	}
	return verb
}

// Add adds note to Done, saying did when did is not "".
func (r *Result) Add(note, did string) {
	r.Done = append(r.Done, note)
	if did != "" {
		if r.Did == nil {
			r.Did = map[string]string{}
		}
		r.Did[note] = did
	}
}

// Refusal is a note a command did not act on.
type Refusal struct {
	Note string `json:"note"`
	Why  string `json:"why"`
}

// ErrNoDaemon is wrapped by a Client's errors when no daemon serves the
// vault (nothing listens on its socket).
var ErrNoDaemon = errors.New("no knotd is running for this vault")
