package state

import (
	"fmt"

	"github.com/knotd/knotd/internal/strand"
)

// Pending is the journal entry of a run whose outcome is known but not yet
// committed: written into the state store before the tie-off section is appended,
// so that a crash between the agent finishing and the state commit neither
// loses the reply nor appends it twice. The processor does, in order:
//
//  1. PutPending (one transaction; the reply is now safe on disk);
//  2. write the tie-off section that Journal describes;
//  3. Complete(RunID) (one transaction: commit Record, drop the entry).
//
// On startup, for each entry of Pendings: if the tie-off already holds a
// section with RunID's marker, only Complete; otherwise write the section
// Journal describes, then Complete.
type Pending struct {
	// RunID is the run's id (UUID v7, so entries sort by start time).
	RunID string
	// Event is the event the run answered.
	Event strand.EventType
	// Record is the record to commit when the run completes; Record.Path
	// is the strand. For a Deleted event the record is removed instead.
	Record Record
	// Content is the strand content the run processed; its hash must be
	// Record.Hash (ignored for a Deleted event).
	Content []byte
	// Journal is what the caller needs to write the run's tie-off section
	// (reply or failure, with its run-id marker) again after a crash. The
	// store keeps it as opaque bytes; the vault package puts JSON there
	// (the section and whether it replaces the tie-off's content).
	Journal []byte
}

// pendingVersion is the first byte of every encoded Pending.
const pendingVersion = 1

// maxRunID bounds a run id's length; a UUID is 36 bytes.
const maxRunID = 128

func (p *Pending) validate() error {
	if p.RunID == "" || len(p.RunID) > maxRunID {
		return fmt.Errorf("state: pending run %q: invalid run id", p.RunID)
	}
	if !p.Event.Valid() {
		return fmt.Errorf("state: pending run %s: invalid event", p.RunID)
	}
	if err := validatePath("pending run "+p.RunID, p.Record.Path); err != nil {
		return err
	}
	if p.Event != strand.Deleted && p.Content != nil && HashOf(p.Content) != p.Record.Hash {
		return fmt.Errorf("state: pending run %s: content does not match the record's hash", p.RunID)
	}
	return nil
}

// appendPending appends the encoding of p to b: the version byte, the
// event, the record's path and encoded record (length-prefixed), the
// content and the journal (length-prefixed). The run id is the key.
func appendPending(b []byte, p *Pending) []byte {
	b = append(b, pendingVersion, byte(p.Event))
	b = appendString(b, p.Record.Path)
	b = appendBytes(b, appendRecord(nil, &p.Record))
	b = appendBytes(b, p.Content)
	return appendBytes(b, p.Journal)
}

func decodePending(runID string, b []byte) (Pending, error) {
	d := decoder{b: b}
	if v := d.byte(); d.err == nil && v != pendingVersion {
		return Pending{}, fmt.Errorf("%w: pending version %d (this knotd reads %d)", errCorruptValue, v, pendingVersion)
	}
	p := Pending{RunID: runID, Event: strand.EventType(d.byte())}
	path := d.string()
	rec := d.raw()
	p.Content = d.bytes()
	p.Journal = d.bytes()
	if err := d.finish(); err != nil {
		return Pending{}, err
	}
	var err error
	if p.Record, err = decodeRecord(path, rec); err != nil {
		return Pending{}, err
	}
	if !p.Event.Valid() {
		return Pending{}, fmt.Errorf("%w: pending event %d", errCorruptValue, p.Event)
	}
	return p, nil
}

// PutPending journals p, replacing any entry with the same run id.
func (tx *Tx) PutPending(p Pending) error {
	if err := p.validate(); err != nil {
		return err
	}
	if err := tx.pending.Put([]byte(p.RunID), appendPending(nil, &p)); err != nil {
		return fmt.Errorf("state: pending run %s: %w", p.RunID, err)
	}
	return nil
}

// Pending returns the journal entry of runID; ok is false if there is none.
func (tx *Tx) Pending(runID string) (Pending, bool, error) {
	v := tx.pending.Get([]byte(runID))
	if v == nil {
		return Pending{}, false, nil
	}
	p, err := decodePending(runID, v)
	if err != nil {
		return Pending{}, false, fmt.Errorf("%w: pending run %s: %w", ErrCorrupt, runID, err)
	}
	return p, true, nil
}

// Pendings returns every journal entry, in run id order.
func (tx *Tx) Pendings() ([]Pending, error) {
	var ps []Pending
	err := tx.pending.ForEach(func(k, _ []byte) error {
		p, _, err := tx.Pending(string(k))
		ps = append(ps, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ps, nil
}

// DeletePending drops the journal entry of runID without committing it
// (for a run that must be forgotten). Dropping a missing entry is not an
// error.
func (tx *Tx) DeletePending(runID string) error {
	if err := tx.pending.Delete([]byte(runID)); err != nil {
		return fmt.Errorf("state: drop pending run %s: %w", runID, err)
	}
	return nil
}

// Complete commits the journal entry of runID and drops it, in this
// transaction: the entry's Record and Content are Put, or for a Deleted
// event the strand's record is deleted. It fails with ErrNotFound if there
// is no such entry.
func (tx *Tx) Complete(runID string) error {
	p, ok, err := tx.Pending(runID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: complete pending run %s", ErrNotFound, runID)
	}
	if p.Event == strand.Deleted {
		err = tx.Delete(p.Record.Path)
	} else {
		err = tx.Put(p.Record, p.Content)
	}
	if err != nil {
		return err
	}
	return tx.DeletePending(runID)
}

// PutPending journals p in its own transaction; see Pending.
func (s *Store) PutPending(p Pending) error {
	return s.Update(func(tx *Tx) error { return tx.PutPending(p) })
}

// Pendings returns every journal entry, in run id order.
func (s *Store) Pendings() (ps []Pending, err error) {
	err = s.View(func(tx *Tx) error {
		ps, err = tx.Pendings()
		return err
	})
	return ps, err
}

// Complete commits and drops the journal entry of runID in one
// transaction; see Tx.Complete.
func (s *Store) Complete(runID string) error {
	return s.Update(func(tx *Tx) error { return tx.Complete(runID) })
}
