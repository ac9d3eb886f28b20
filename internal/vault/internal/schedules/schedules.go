// Package schedules decides when the notes that carry a schedule
// (knot_schedule, or a rule's schedule:) run with event Scheduled, and
// keeps, in knotd's state directory, the occurrence each one last fired.
//
// An occurrence is named by its due time (package schedule computes the
// same occurrences on every device). The Book records, per note, the
// schedule's text and the last occurrence it fired (or, for a schedule
// seen for the first time, the moment it was first seen: a new schedule
// starts from now and never fires for the past). Occurrences missed while
// knotd was stopped or the machine slept collapse into one late run that
// stands for all of them, never a pile.
//
// The tie-off records what fired too: a Scheduled section's run marker
// holds the occurrence it stands for (due=). When a device starts
// answering the vault (a start, --once, a handover), Start reads it, so
// that an occurrence another device fired (or this one fired before its
// state was lost) is neither skipped nor repeated.
//
// A Book is safe for concurrent use.
package schedules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/durable"
	"github.com/knotd/knotd/internal/schedule"
)

// FileName is the Book's file in the vault's folder of the state
// directory.
const FileName = "schedules.json"

// maxFileSize bounds what Load reads.
const maxFileSize = 16 << 20

// LateAfter is how long after its due time an occurrence fires before
// its run says it is late.
const LateAfter = time.Minute

// missedLimit bounds how many missed occurrences are counted.
const missedLimit = 10000

// Note is a note that carries a schedule, as the vault read it.
type Note struct {
	Rel string
	// Schedule is the parsed schedule; zero when Problem is set.
	Schedule schedule.Schedule
	// Problem says why the note's schedule text cannot be used.
	Problem string
}

// Fire is an occurrence (or, when late, the occurrences) of a note's
// schedule that fell due: the note runs with event Scheduled.
type Fire struct {
	Rel string
	Occ agentrun.Occurrence
}

// Status is one schedule as knotd status shows it.
type Status struct {
	Note     string    `json:"note"`
	Schedule string    `json:"schedule"`
	Zone     string    `json:"zone,omitempty"`
	Next     time.Time `json:"next,omitzero"`
	Last     time.Time `json:"last,omitzero"`
	Problem  string    `json:"problem,omitempty"`
}

// record is what the Book keeps of one note.
type record struct {
	Schedule string    `json:"schedule"`
	Last     time.Time `json:"last"`
}

// Book is the notes' schedules and the occurrences they fired.
type Book struct {
	mu    sync.Mutex
	fresh bool   // no file was read: this device keeps no record yet
	file  string // "" writes nothing (--dry-run)
	recs  map[string]record
	notes map[string]Note
}

// Load reads the Book kept in file (a missing file is an empty Book). A
// file that cannot be read as a Book is an error wrapping ErrDamaged with
// the empty Book: the caller says so and goes on (the tie-offs still
// record what fired). With dry, the Book never writes.
func Load(file string, dry bool) (*Book, error) {
	b := &Book{file: file, recs: map[string]record{}, notes: map[string]Note{}, fresh: true}
	if dry {
		b.file = ""
	}
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return b, fmt.Errorf("schedules: %w", err)
	}
	defer f.Close() // read only
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return b, fmt.Errorf("schedules: read %s: %w", file, err)
	}
	if len(data) > maxFileSize {
		return b, fmt.Errorf("%w: %s is larger than %d bytes", ErrDamaged, file, maxFileSize)
	}
	var recs map[string]record
	if err := json.Unmarshal(data, &recs); err != nil {
		return b, fmt.Errorf("%w: %s: %v", ErrDamaged, file, err)
	}
	for rel, r := range recs {
		if rel != "" && r.Schedule != "" && !r.Last.IsZero() {
			b.recs[rel] = r
		}
	}
	b.fresh = false
	return b, nil
}

// Fresh reports whether the Book was read from no file (this device
// keeps no record of the schedules yet, or lost it): then every note must
// be looked at to find those that carry one.
func (b *Book) Fresh() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fresh
}

// Has reports whether the Book keeps a record of rel's schedule.
func (b *Book) Has(rel string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.recs[rel]
	return ok
}

// ErrDamaged is wrapped by Load's error about a file it cannot read as a
// Book.
var ErrDamaged = errors.New("schedules: damaged")

// Set replaces the notes that carry a schedule. The records of notes no
// longer among them are dropped (a schedule removed and added again starts
// from then).
func (b *Book) Set(notes []Note) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notes = make(map[string]Note, len(notes))
	for _, n := range notes {
		b.notes[n.Rel] = n
	}
	for rel := range b.recs {
		if n, ok := b.notes[rel]; !ok || n.Problem != "" {
			delete(b.recs, rel)
		}
	}
}

// Start is called when this device starts answering the vault: for each
// note, the newest occurrence its tie-off records as fired (newest; zero
// when none) moves its last fired occurrence forward, so that what
// another device fired is not fired again. A note seen for the first time
// (no record, no tie-off) starts from now.
func (b *Book) Start(now time.Time, newest func(rel string) time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for rel, n := range b.notes {
		if n.Problem != "" {
			continue
		}
		r, ok := b.recs[rel]
		if ok && r.Schedule != n.Schedule.String() {
			ok = false // the schedule changed: it starts from now
			r = record{}
		}
		if t := newest(rel); !t.IsZero() && t.After(r.Last) && !t.After(now) {
			r.Last = t
		}
		if !ok && r.Last.IsZero() {
			r.Last = now
		}
		r.Schedule = n.Schedule.String()
		b.recs[rel] = r
	}
	return b.saveLocked()
}

// Due returns the notes whose schedule fell due at or before now, each
// once, with the occurrences its run stands for, and records them as
// fired (at most once: an occurrence is recorded before its run). A note
// seen for the first time starts from now.
func (b *Book) Due(now time.Time) ([]Fire, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var fires []Fire
	changed := false
	for _, rel := range slices.Sorted(maps.Keys(b.notes)) {
		n := b.notes[rel]
		if n.Problem != "" {
			continue
		}
		r, ok := b.recs[rel]
		if !ok || r.Schedule != n.Schedule.String() {
			b.recs[rel] = record{Schedule: n.Schedule.String(), Last: now}
			changed = true
			continue
		}
		count, first, latest := n.Schedule.Missed(r.Last, now, missedLimit)
		if count == 0 {
			continue
		}
		occ := agentrun.Occurrence{Schedule: n.Schedule.String(), Zone: n.Schedule.Location().String(),
			Due: latest.UTC(), Count: count, First: first.UTC()}
		if late := now.Sub(latest); late > LateAfter || count > 1 {
			occ.Late = late
		}
		fires = append(fires, Fire{Rel: rel, Occ: occ})
		r.Last = latest
		b.recs[rel] = r
		changed = true
	}
	if !changed {
		return fires, nil
	}
	return fires, b.saveLocked()
}

// Next returns the earliest time after now at which a schedule falls due;
// the zero time when none will.
func (b *Book) Next(now time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	var next time.Time
	for rel, n := range b.notes {
		if n.Problem != "" {
			continue
		}
		from := now
		if r, ok := b.recs[rel]; ok && r.Schedule == n.Schedule.String() && r.Last.Before(now) {
			from = r.Last
		}
		if t := n.Schedule.Next(from); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// Statuses returns every schedule, by note: its next time, the last
// occurrence it fired, or the problem that keeps it from firing.
func (b *Book) Statuses(now time.Time) []Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Status, 0, len(b.notes))
	for _, rel := range slices.Sorted(maps.Keys(b.notes)) {
		n := b.notes[rel]
		if n.Problem != "" {
			out = append(out, Status{Note: rel, Problem: n.Problem})
			continue
		}
		st := Status{Note: rel, Schedule: n.Schedule.String(), Zone: n.Schedule.Location().String()}
		from := now
		if r, ok := b.recs[rel]; ok && r.Schedule == n.Schedule.String() {
			st.Last = r.Last
			if r.Last.Before(now) {
				from = r.Last
			}
		}
		st.Next = n.Schedule.Next(from)
		out = append(out, st)
	}
	return out
}

// saveLocked writes the Book's records to its file: a temporary file,
// synced, renamed over it, mode 0600.
func (b *Book) saveLocked() error {
	if b.file == "" {
		return nil
	}
	data, err := json.Marshal(b.recs)
	if err != nil {
		return fmt.Errorf("schedules: %w", err)
	}
	dir := filepath.Dir(b.file)
	tmp, err := os.CreateTemp(dir, FileName+".*.tmp")
	if err != nil {
		return fmt.Errorf("schedules: %w", err)
	}
	name := tmp.Name()
	defer os.Remove(name) // after the rename, there is nothing left to remove
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close() // the chmod error is the one to report
		return fmt.Errorf("schedules: %w", err)
	}
	if _, err := io.Copy(tmp, bytes.NewReader(data)); err != nil {
		_ = tmp.Close() // the write error is the one to report
		return fmt.Errorf("schedules: write %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close() // the sync error is the one to report
		return fmt.Errorf("schedules: sync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("schedules: close %s: %w", name, err)
	}
	if err := os.Rename(name, b.file); err != nil {
		return fmt.Errorf("schedules: %w", err)
	}
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("schedules: sync %s: %w", dir, err)
	}
	return nil
}
