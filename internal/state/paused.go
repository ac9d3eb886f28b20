package state

import (
	"encoding/binary"
	"fmt"
	"time"
	"unicode/utf8"
)

// Pause is a paused strand: knotd records its changes' runs only once
// it is resumed (or run by hand). Why says who paused it and why.
type Pause struct {
	Path  string    `json:"strand"`
	Since time.Time `json:"since"`
	Why   string    `json:"why"`
}

// maxPauseWhy bounds a pause's reason.
const maxPauseWhy = 4096

// Pause pauses the strand at rel since t, for why, and reports whether it
// was not paused before (a strand paused again keeps its first pause).
// The strand need not have a record: a note knotd has not answered yet
// can be paused too.
func (tx *Tx) Pause(rel string, t time.Time, why string) (isNew bool, err error) {
	if err := validatePath("pause", rel); err != nil {
		return false, err
	}
	if _, paused, err := tx.PausedOf(rel); err != nil || paused {
		return false, err
	}
	if len(why) > maxPauseWhy || !utf8.ValidString(why) {
		return false, fmt.Errorf("state: pause %s: the reason must be UTF-8 of at most %d bytes", rel, maxPauseWhy)
	}
	if tx.paused == nil {
		b, err := tx.tx.CreateBucket(bucketPaused)
		if err != nil {
			return false, fmt.Errorf("state: pause %s: %w", rel, err)
		}
		tx.paused = b
	}
	v := append(binary.AppendVarint(nil, t.UnixNano()), why...)
	if err := tx.paused.Put([]byte(rel), v); err != nil {
		return false, fmt.Errorf("state: pause %s: %w", rel, err)
	}
	return true, nil
}

// Resume resumes the strand at rel and reports whether it was paused.
func (tx *Tx) Resume(rel string) (was bool, err error) {
	if tx.pausedValue(rel) == nil {
		return false, nil
	}
	if err := tx.paused.Delete([]byte(rel)); err != nil {
		return false, fmt.Errorf("state: resume %s: %w", rel, err)
	}
	return true, nil
}

// PausedOf returns the pause of the strand at rel; ok is false when it
// is not paused.
func (tx *Tx) PausedOf(rel string) (p Pause, ok bool, err error) {
	v := tx.pausedValue(rel)
	if v == nil {
		return Pause{}, false, nil
	}
	p, err = decodePause(rel, v)
	return p, err == nil, err
}

// Paused returns every paused strand, in path order.
func (tx *Tx) Paused() ([]Pause, error) {
	var ps []Pause
	if tx.paused == nil {
		return nil, nil
	}
	err := tx.paused.ForEach(func(k, v []byte) error {
		p, err := decodePause(string(k), v)
		if err == nil {
			ps = append(ps, p)
		}
		return err
	})
	return ps, err
}

// pausedValue is the stored pause of rel, nil when it has none.
func (tx *Tx) pausedValue(rel string) []byte {
	if tx.paused == nil {
		return nil
	}
	return tx.paused.Get([]byte(rel))
}

func decodePause(rel string, v []byte) (Pause, error) {
	ns, n := binary.Varint(v)
	if n <= 0 || !utf8.Valid(v[n:]) || validatePath("pause", rel) != nil {
		return Pause{}, fmt.Errorf("%w: pause of %q: %w", ErrCorrupt, rel, errCorruptValue)
	}
	return Pause{Path: rel, Since: time.Unix(0, ns).UTC(), Why: string(v[n:])}, nil
}

// Paused returns every paused strand, in path order.
func (s *Store) Paused() (ps []Pause, err error) {
	err = s.View(func(tx *Tx) error {
		ps, err = tx.Paused()
		return err
	})
	return ps, err
}

// PausedOf returns the pause of the strand at rel; ok is false when it
// is not paused.
func (s *Store) PausedOf(rel string) (p Pause, ok bool, err error) {
	err = s.View(func(tx *Tx) error {
		p, ok, err = tx.PausedOf(rel)
		return err
	})
	return p, ok, err
}
