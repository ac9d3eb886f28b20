// Package control is how the knotd commands that steer a running daemon
// (knotd status, run, retry, pause, resume, approve, deny, withdraw, and
// the console) reach it: a local socket in the vault's folder of the
// state directory, never the network. The daemon serves a Backend on it;
// a Client is the same Backend at the other end.
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
//	{"op":"questions"}                       (a Questioner's: the questions that wait)
//	{"op":"answer","id":"3f9a2c1b","verdict":"deny","why":"…","from":"command"}
//
// answered by {"status":{…}}, {"result":{…}}, {"path":"…"} (copy_state),
// {"files":[…]} (reload), {"questions":[…]}, {"answered":{…}}, or
// {"error":"…"} (with "code":"no_question" when no question waits with
// the id an answer names).
//
// The socket is a Unix domain socket (on Windows too, which has them
// since Windows 10 1803), made 0600 in a folder that is 0700: only the
// user who runs knotd can connect.
package control

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/knotd/knotd/internal/question"
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

// Questioner is a Backend that lists the questions agents asked
// (permissions: ask) that wait for the user's answer, and answers one:
// knotd status, knotd approve|deny|withdraw and the console.
type Questioner interface {
	// Questions returns the questions that wait, oldest first.
	Questions(ctx context.Context) ([]Question, error)
	// Answer answers the question id (a unique prefix of it will do)
	// with verdict and the user's reason why, given from (the command
	// or the console). An id no waiting question has is an error that
	// wraps ErrNoQuestion and lists the ids that wait.
	Answer(ctx context.Context, id string, verdict question.Verdict, why string, from question.Source) (Answered, error)
}

// ErrNoQuestion is wrapped by Answer's error when no question waits with
// the id it was given: there is none, or it was answered already.
var ErrNoQuestion = errors.New("no such question waits")

// NoQuestion returns an error that says msg and wraps ErrNoQuestion.
func NoQuestion(msg string) error { return said{msg, ErrNoQuestion} }

// said is an error worded for people that is a sentinel error too.
type said struct {
	msg string
	is  error
}

func (e said) Error() string { return e.msg }
func (e said) Unwrap() error { return e.is }

// QuestionID reads the id of a question the user typed: the 8 hex digits
// of a question's id (question.IDLen), or at least 4 of its first ones
// (prefix is then true), in either case. It says what is wrong with
// anything else.
func QuestionID(s string) (id string, prefix bool, err error) {
	id = strings.ToLower(strings.TrimSpace(s))
	ok := len(id) >= 4 && len(id) <= question.IDLen
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
	}
	if !ok {
		return "", false, fmt.Errorf("%q is not a question's id: that is %d hex digits such as 3f9a2c1b (or its first 4 or more), as the question in the tie-off and knotd status show it", s, question.IDLen)
	}
	return id, len(id) < question.IDLen, nil
}

// Question is a call an agent asked to make that waits for the user's
// answer. Times are UTC.
type Question struct {
	ID string `json:"id"`
	// Note is the vault-relative path of the note whose run asked.
	Note  string    `json:"note"`
	Agent string    `json:"agent"`
	RunID string    `json:"run_id"`
	Asked time.Time `json:"asked"`
	// Summary is what the call does, on one line (see Summary).
	Summary string        `json:"summary"`
	Call    question.Call `json:"call"`
}

// Answered is what an answer did: the question it answered, and what
// happens next.
type Answered struct {
	Question Question         `json:"question"`
	Verdict  question.Verdict `json:"verdict"`
	// Next says what happens now, in a sentence: the run continues, or
	// when it will.
	Next string `json:"next"`
}

// maxSummary bounds Summary, in characters.
const maxSummary = 120

// Summary says what a held call does, on one line of at most maxSummary
// characters: "edit notes/plan.md (Write)", "run `git push` (Bash)",
// "fetch https://example.com (WebFetch)", "use Tool".
func Summary(c question.Call) string {
	var s string
	switch {
	case c.Kind == question.KindEdit && c.Path != "":
		s = "edit " + c.Path
	case c.Kind == question.KindCommand && c.Command != "":
		s = "run `" + strings.TrimSpace(c.Command) + "`"
	case c.Kind == question.KindFetch && c.URL != "":
		s = "fetch " + c.URL
	case c.Kind == question.KindEdit:
		s = "edit a file"
	case c.Kind == question.KindCommand:
		s = "run a command"
	case c.Kind == question.KindFetch:
		s = "reach the network"
	default:
		s = "use " + c.Tool
	}
	if c.Tool != "" && !strings.HasPrefix(s, "use ") {
		s += " (" + c.Tool + ")"
	}
	return OneLine(s, maxSummary)
}

// OneLine is s on one line, its control characters and runs of space
// made one space, cut to at most n characters (ending in "…" when cut).
func OneLine(s string, n int) string {
	words := strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })
	r := []rune(strings.Join(words, " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:max(0, n-1)]) + "…"
}

// Age says how long ago something was, to the second under a minute, to
// the minute under a day, then in days and hours: "40s", "5m", "3h20m",
// "2d4h".
func Age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
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
	// Questions are the questions that wait for the user's answer, oldest
	// first.
	Questions []Question `json:"questions"`
	Today     Totals     `json:"today"`
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
