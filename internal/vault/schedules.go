package vault

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/schedule"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vault/internal/reconcile"
	"github.com/knotd/knotd/internal/vault/internal/schedules"
)

// scheduleRescan is how often the daemon looks again at which notes carry
// a schedule (it reads again only the notes whose content changed).
const scheduleRescan = time.Minute

// The bounds of the tie-off's tail read for the newest Scheduled section.
const (
	scheduledTailSections = 64
	scheduledTailBytes    = 1 << 20
)

// scheduleKeeper is the vault's schedules: the Book (package
// vault/internal/schedules) and what it read of each note.
type scheduleKeeper struct {
	once sync.Once
	book *schedules.Book
	mu   sync.Mutex
	// cache is each note's knot_schedule as read from the content whose
	// hash it keeps.
	cache map[string]scheduleRead
}

type scheduleRead struct {
	hash    state.Hash
	text    string
	problem string
}

// scheduleBook returns the vault's Book, loaded on first use.
func (v *Vault) scheduleBook() *schedules.Book {
	k := &v.schedules
	k.once.Do(func() {
		b, err := schedules.Load(filepath.Join(v.folder.Dir, schedules.FileName), v.dry)
		if err != nil {
			v.log.Error("cannot read knotd's record of the schedules that fired; the tie-offs say what fired last", "err", err)
		}
		k.book = b
	})
	return k.book
}

// scanSchedules finds the notes that carry a schedule (knot_schedule, else
// the rules' schedule:) among those knotd recorded, and gives them to the
// Book. A schedule that cannot be read is said in the log, once, and in
// knotd status; the note is otherwise served as before.
//
// Reading every note at every start would make a start's cost grow with
// the vault: only the first scan of a device that keeps no record of the
// schedules (schedules.json) reads them all. Otherwise the first scan
// reads the notes the record names and those changed on disk since their
// record (a stat, as the catch-up makes), and takes the others as they
// were recorded (no knot_schedule): a later change of a note changes its
// record's hash, and a later scan reads it.
func (v *Vault) scanSchedules() error {
	k := &v.schedules
	book := v.scheduleBook()
	k.mu.Lock()
	lazy := k.cache == nil && !book.Fresh()
	if k.cache == nil {
		k.cache = map[string]scheduleRead{}
	}
	k.mu.Unlock()
	var notes []schedules.Note
	seen := map[string]bool{}
	err := v.store.ForEach(func(r state.Record) error {
		seen[r.Path] = true
		sc := v.scopeOf(r.Path)
		if sc.Off {
			return nil
		}
		var rd scheduleRead
		if lazy && !book.Has(r.Path) && !v.changedSince(r) {
			rd = scheduleRead{hash: r.Hash}
			k.mu.Lock()
			k.cache[r.Path] = rd
			k.mu.Unlock()
		} else {
			rd = v.noteSchedule(r)
		}
		text, from := rd.text, "knot_schedule"
		if text == "" && rd.problem == "" {
			text, from = sc.Schedule, "the rules' schedule"
		}
		problem := rd.problem
		var s schedule.Schedule
		if text != "" && problem == "" {
			var err error
			if s, err = schedule.Parse(text, time.Local); err != nil {
				problem = from + ": " + err.Error()
			}
		}
		if problem != "" {
			v.warnOnce(r.Path, "the note's schedule cannot be used; the note is otherwise served as usual", "why", problem)
			notes = append(notes, schedules.Note{Rel: r.Path, Problem: problem})
			return nil
		}
		if text != "" {
			notes = append(notes, schedules.Note{Rel: r.Path, Schedule: s})
		}
		return nil
	})
	if err != nil {
		return err
	}
	k.mu.Lock()
	for rel := range k.cache {
		if !seen[rel] {
			delete(k.cache, rel)
		}
	}
	k.mu.Unlock()
	book.Set(notes)
	return nil
}

// changedSince reports whether the note r records is not, by its stamp,
// the version recorded (or cannot be looked at).
func (v *Vault) changedSince(r state.Record) bool {
	info, where, err := v.recon.LstatStrand(r.Path)
	return err != nil || where != reconcile.Present || reconcile.Stamp(info) != r.Stamp
}

// noteSchedule reads the knot_schedule of the note r records, from its
// content when it changed since it was last read.
func (v *Vault) noteSchedule(r state.Record) scheduleRead {
	k := &v.schedules
	k.mu.Lock()
	rd, ok := k.cache[r.Path]
	k.mu.Unlock()
	if ok && rd.hash == r.Hash {
		return rd
	}
	rd = scheduleRead{hash: r.Hash}
	content, _, _, tooBig, err := v.readStrand(r.Path, v.config().MaxStrandSize)
	// A note gone, unreadable or too big has no schedule (its run says
	// what is wrong).
	if err == nil && !tooBig {
		if doc, err := frontmatter.Parse(content); err == nil {
			rd.text = doc.Fields.Schedule
			if p := doc.Fields.ScheduleProblem; p != nil {
				rd.problem = p.Error()
			}
		}
	}
	k.mu.Lock()
	if k.cache == nil {
		k.cache = map[string]scheduleRead{}
	}
	k.cache[r.Path] = rd
	k.mu.Unlock()
	return rd
}

// newestScheduled returns the occurrence the newest Scheduled section of
// rel's tie-off stands for (its marker's due=), zero when there is none
// among its newest sections.
func (v *Vault) newestScheduled(rel string) time.Time {
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return time.Time{}
	}
	w, err := tieoff.Tail(v.fs, t, scheduledTailSections, scheduledTailBytes)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			v.log.Warn("cannot read the note's tie-off for the occurrence its schedule fired last", "strand", rel, "err", err)
		}
		return time.Time{}
	}
	for i := len(w.Sections) - 1; i >= 0; i-- {
		if s := w.Sections[i]; s.Event == strand.Scheduled && !s.Due.IsZero() {
			return s.Due
		}
	}
	return time.Time{}
}

// startSchedules is where this device starts answering: it reads which
// notes carry a schedule and what their tie-offs say fired last.
func (v *Vault) startSchedules() {
	if err := v.scanSchedules(); err != nil {
		v.log.Error("cannot look for the notes' schedules", "err", err)
		return
	}
	if err := v.scheduleBook().Start(v.now(), v.newestScheduled); err != nil {
		v.log.Error("cannot record the schedules that fired", "err", err)
	}
}

// submitDue submits every note whose schedule fell due, once, with the
// occurrences it stands for (one late run for those missed).
func (v *Vault) submitDue(s *scheduler.Scheduler[Job]) {
	for _, f := range v.dueSchedules() {
		occ := f.Occ
		if occ.Late > 0 {
			v.log.Info("schedule fell due while knotd was not running; one late run stands for the occurrences missed",
				"strand", f.Rel, "schedule", occ.Schedule, "due", occ.Due, "late", occ.Late.Round(time.Second), "occurrences", occ.Count)
		} else {
			v.log.Info("schedule fell due", "strand", f.Rel, "schedule", occ.Schedule, "due", occ.Due)
		}
		s.Submit(f.Rel, Job{FiredBy: agentrun.FiredBySchedule, Scheduled: &occ})
	}
}

// dueSchedules returns the notes whose schedule fell due, each once, and
// records them as fired (a dry run records nothing).
func (v *Vault) dueSchedules() []schedules.Fire {
	fires, err := v.scheduleBook().Due(v.now())
	if err != nil {
		// The occurrence still fires; its section records it too.
		v.log.Error("cannot record the schedules that fired", "err", err)
	}
	return fires
}

// runSchedules fires the notes' schedules while this device answers, until
// ctx ends: at each occurrence, and after a sleep at the first look (a
// late run).
func (v *Vault) runSchedules(ctx context.Context, s *scheduler.Scheduler[Job]) {
	v.startSchedules()
	book := v.scheduleBook()
	for {
		v.submitDue(s)
		wait := scheduleRescan
		if next := book.Next(v.now()); !next.IsZero() {
			wait = min(wait, max(next.Sub(v.now()), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := v.scanSchedules(); err != nil {
			v.log.Error("cannot look for the notes' schedules", "err", err)
		}
	}
}

// ScheduleStatuses returns every schedule of the vault's notes, with its
// next time (knotd status).
func (v *Vault) ScheduleStatuses() []schedules.Status {
	return v.scheduleBook().Statuses(v.now())
}
