package vault

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/knotd/knotd/internal/vault/internal/reconcile"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/vault/internal/ctl"
	"github.com/knotd/knotd/internal/vaultfs"
)

// What knotd status, run, retry, pause and resume ask of a vault is
// package vault/internal/ctl's Control; controlHost is all it asks of the
// Vault.

// Control is what the control socket calls on a vault (knotd status,
// run, retry, pause, resume, trust, and a dry run's copy of the state):
// the daemon serves it, and the commands call it on a vault they open
// themselves when no daemon runs.
type Control = ctl.Control

// Control returns v's control adapter.
func (v *Vault) Control() *Control {
	return ctl.New(controlHost{v}, ctl.Options{Root: v.root, Since: v.since, Device: v.device, Folder: v.folder,
		Active: &v.active, Answering: v.answering, Budget: v.budget})
}

// ControlSocket returns the path of the control socket of the vault at
// root in the state directory home ("" for the user's): where its daemon
// listens. ok is false when knotd never ran on the vault on this machine.
func ControlSocket(home, root string) (path string, ok bool, err error) {
	f, ok, err := folderOf(home, root)
	if !ok {
		return "", false, err
	}
	return control.SocketPath(f.Dir), true, nil
}

// ControlSocket returns the path of v's control socket.
func (v *Vault) ControlSocket() string { return control.SocketPath(v.folder.Dir) }

// StoredStatus is the status of the vault at root (whose folder is in the
// state directory home, "" for the user's) when no daemon runs: what its
// state store and transcripts say (failures, paused notes, the day's
// runs). It changes nothing; ok is false when knotd never ran on the
// vault on this machine.
func StoredStatus(home, root string) (st control.Status, ok bool, err error) {
	f, ok, err := folderOf(home, root)
	if !ok {
		return st, false, err
	}
	st, err = ctl.StoredStatus(f, root)
	return st, true, err
}

// notesOf turns the vault-relative paths the user named into strands,
// refusing, with why, what knotd would not run (see ctl.NoteOf and
// whyNotRun).
func (v *Vault) notesOf(notes []string) ([]string, control.Result) {
	return ctl.NotesOf(notes, v.whyNotRun)
}

// whyNotRun says why a run by hand of the strand rel would run nothing,
// "" when it would run: no such note (and none whose deletion waits), a
// path that is no regular file (a symbolic link, a FIFO, a folder) or
// lies below a symbolic link to a folder, an ignored one, one a rule
// keeps from every agent, one whose frontmatter says knot_mode: off or
// leaves out its event, an empty one. What only a run can find (a
// strand knotd may not read, frontmatter it cannot parse) is left to
// the run, which records it as its failure.
func (v *Vault) whyNotRun(rel string) string {
	// The ignore files on the way to it, which no walk may have read yet
	// (knotd run with no daemon walks nothing).
	if err := v.rules.Load(v.root, rel); err != nil {
		return fmt.Sprintf("cannot read the ignore files on the way to it: %v", err)
	}
	if dir, _, err := v.recon.LinkedDir(rel); err == nil && dir != "" {
		return fmt.Sprintf("not a note knotd answers: it is below %s, a symbolic link to a folder, which knotd does not follow", dir)
	}
	info, where, err := v.recon.LstatStrand(rel)
	switch {
	case err != nil:
		return err.Error()
	case where == reconcile.Ignored:
		return "ignored (knotd --explain-ignore says why)"
	case info != nil && !info.Mode().IsRegular():
		return fmt.Sprintf("not a note knotd answers: %s, and knotd answers only regular .md files", vaultfs.TypeName(info.Mode()))
	}
	_, has, err := v.store.Get(rel)
	if err != nil {
		return fmt.Sprintf("cannot read its record: %v", err)
	}
	if where == reconcile.Absent && !has {
		return "no such note"
	}
	sc := v.scopeOf(rel)
	if sc.Off {
		if strings.HasPrefix(sc.Why, "rule ") {
			return "not sent to any agent: " + sc.Why + " (mode: off)"
		}
		return "not sent to any agent: " + sc.Why
	}
	if where == reconcile.Absent {
		return "" // its deletion runs
	}
	content, _, _, tooBig, err := v.readStrand(rel, v.config().MaxStrandSize)
	if err != nil || tooBig || !utf8.Valid(content) {
		return "" // the run records why it cannot run
	}
	if !v.config().RunEmpty && len(bytes.TrimSpace(frontmatter.WithoutOwnKeys(content))) == 0 {
		return "it is empty: nothing to answer (it runs once it has content; run_empty: true runs it now)"
	}
	doc, err := frontmatter.Parse(content)
	if err != nil {
		return ""
	}
	if m, err := frontmatter.ResolveMode(doc.Fields); err == nil && m == frontmatter.ModeOff {
		return "its frontmatter says knot_mode: off (knotd leaves it alone until that goes)"
	}
	event := "created"
	if has {
		event = "modified"
	}
	if ev := doc.Fields.Events; ev != nil && !slices.Contains(ev, event) {
		return "its knot_events does not include " + event
	}
	if ev := sc.Events; ev != nil && !slices.Contains(ev, event) {
		return "the rules for its path do not run it on " + event
	}
	return ""
}

// controlHost is what the control adapter asks of the vault: its clock,
// logger, store and configuration, the daemon's scheduler, and what knotd
// would run, read each time.
type controlHost struct{ v *Vault }

func (h controlHost) Now() time.Time       { return h.v.now() }
func (h controlHost) Log() *slog.Logger    { return h.v.log }
func (h controlHost) Store() *state.Store  { return h.v.store }
func (h controlHost) DefaultAgent() string { return h.v.config().DefaultAgent }

// Schedules: the notes' schedules and their next times (knotd status).
func (h controlHost) Schedules() []control.Schedule {
	var out []control.Schedule
	for _, s := range h.v.ScheduleStatuses() {
		out = append(out, control.Schedule{Note: s.Note, Schedule: s.Schedule, Zone: s.Zone, Next: s.Next, Last: s.Last, Problem: s.Problem})
	}
	return out
}

func (h controlHost) Live() (ctl.Scheduler, bool) {
	if s := h.v.live.Load(); s != nil {
		return liveJobs{s}, true
	}
	return nil, false
}

func (h controlHost) WhyNotRun(rel string) string { return h.v.whyNotRun(rel) }

func (h controlHost) Deleted(rel string) bool {
	_, where, err := h.v.recon.LstatStrand(rel)
	return err == nil && where == reconcile.Absent
}

func (h controlHost) ReadStrand(rel string) ([]byte, bool, error) {
	content, _, _, tooBig, err := h.v.readStrand(rel, h.v.config().MaxStrandSize)
	return content, tooBig, err
}

func (h controlHost) Reload(why string) ([]string, error) {
	r, err := h.v.Reload(why)
	return r.Files, err
}

func (h controlHost) Questions() ([]control.Question, error) {
	qs, err := h.v.Questions()
	if err != nil {
		return nil, err
	}
	out := make([]control.Question, 0, len(qs))
	for _, q := range qs {
		out = append(out, controlQuestion(q))
	}
	return out, nil
}

func (h controlHost) AnswerQuestion(id string, verdict question.Verdict, why string, from question.Source) (control.Question, error) {
	q, err := h.v.AnswerQuestion(id, verdict, why, from)
	if errors.Is(err, ErrNoQuestion) {
		return control.Question{}, fmt.Errorf("%w: %w", control.ErrNoQuestion, err)
	}
	if err != nil {
		return control.Question{}, err
	}
	return controlQuestion(q), nil
}

// controlQuestion is q as the control socket says it.
func controlQuestion(q Question) control.Question {
	return ctl.QuestionOf(q.ID, q.Strand, q.Agent, q.RunID, q.Asked, q.Call)
}

// liveJobs is the daemon's scheduler, as the control adapter submits to
// it and lists it.
type liveJobs struct{ s *scheduler.Scheduler[Job] }

func (l liveJobs) Submit(rel string, byHand bool) scheduler.Submitted {
	if byHand {
		return l.s.Submit(rel, Job{FiredBy: agentrun.FiredByUser, Force: true, ByHand: true})
	}
	return l.s.Submit(rel, Job{FiredBy: agentrun.FiredByUser})
}

func (l liveJobs) Queued() []control.Queued {
	var q []control.Queued
	for _, e := range l.s.Snapshot() {
		if !e.Running || e.FollowUp {
			q = append(q, control.Queued{Note: e.Key, FiredBy: string(e.Job.FiredBy), FollowUp: e.Running})
		}
	}
	return q
}
