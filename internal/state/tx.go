package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Tx is one transaction on a Store, handed to the function given to
// Store.Update or Store.View. It must not be used after that function
// returns, nor from another goroutine. Slices it returns are copies the
// caller owns.
type Tx struct {
	tx                                                         *bolt.Tx
	meta, strands, content, sessions, pending, notices, paused *bolt.Bucket
	breakers                                                   *bolt.Bucket // nil until the first counts stored
	groups                                                     *bolt.Bucket // nil until the first group recorded
}

func newTx(btx *bolt.Tx) (*Tx, error) {
	tx := &Tx{
		tx:       btx,
		meta:     btx.Bucket(bucketMeta),
		strands:  btx.Bucket(bucketStrands),
		content:  btx.Bucket(bucketContent),
		sessions: btx.Bucket(bucketSessions),
		pending:  btx.Bucket(bucketPending),
		notices:  btx.Bucket(bucketNotices),
		paused:   btx.Bucket(bucketPaused), // nil until the first pause
		breakers: btx.Bucket(bucketBreakers),
		groups:   btx.Bucket(bucketGroups),
	}
	// checkSchema and prepareSchema made every bucket when the store was
	// opened: one missing now is a damaged page of the root bucket.
	for i, b := range []*bolt.Bucket{tx.meta, tx.strands, tx.content, tx.sessions, tx.pending, tx.notices} {
		if b == nil {
			return nil, fmt.Errorf("%w: bucket %s missing", ErrCorrupt, allBuckets[i])
		}
	}
	return tx, nil
}

// Get returns the record of the strand at rel; ok is false if there is
// none.
func (tx *Tx) Get(rel string) (Record, bool, error) {
	v := tx.strands.Get([]byte(rel))
	if v == nil {
		return Record{}, false, nil
	}
	rec, err := decodeRecord(rel, v)
	if err != nil {
		return Record{}, false, fmt.Errorf("%w: record %s: %w", ErrCorrupt, rel, err)
	}
	return rec, true, nil
}

// Content returns the processed content of the strand at rel, checked
// against the record's hash; ok is false if there is no record.
func (tx *Tx) Content(rel string) ([]byte, bool, error) {
	rec, ok, err := tx.Get(rel)
	if !ok || err != nil {
		return nil, false, err
	}
	raw := tx.content.Get([]byte(rel))
	if raw == nil && rec.Hash != HashOf(nil) {
		return nil, false, nil // not kept (see Put)
	}
	content := append([]byte{}, raw...)
	if HashOf(content) != rec.Hash {
		return nil, false, fmt.Errorf("%w: content of %s does not match its hash", ErrCorrupt, rel)
	}
	return content, true, nil
}

// BySession returns the record of the strand whose session is id; ok is
// false if no strand holds it.
func (tx *Tx) BySession(id string) (Record, bool, error) {
	if id == "" {
		return Record{}, false, nil
	}
	p := tx.sessions.Get([]byte(id))
	if p == nil {
		return Record{}, false, nil
	}
	rec, ok, err := tx.Get(string(p))
	if err != nil || !ok || rec.Session != id {
		return Record{}, false, err
	}
	return rec, true, nil
}

// Put commits rec, keyed by rec.Path, together with the content it was
// processed from: sha256(content) must equal rec.Hash, unless content is
// nil, which records a version whose content knotd does not keep (a strand
// over the size limit): Content then reports it absent. It replaces any
// record at that path and keeps the session index current. It fails with
// ErrSessionTaken if another existing strand holds rec.Session.
func (tx *Tx) Put(rec Record, content []byte) error {
	if err := validatePath("put", rec.Path); err != nil {
		return err
	}
	if content != nil && HashOf(content) != rec.Hash {
		return fmt.Errorf("state: put %s: content does not match the record's hash", rec.Path)
	}
	if rec.Turns < 0 || rec.LastOutcome >= outcomeEnd {
		return fmt.Errorf("state: put %s: invalid turns or outcome", rec.Path)
	}
	old, had, err := tx.Get(rec.Path)
	if err != nil {
		return err
	}
	if rec.Session != "" {
		owner, taken, err := tx.BySession(rec.Session)
		if err != nil {
			return err
		}
		if taken && owner.Path != rec.Path {
			return fmt.Errorf("%w: put %s: session %s is held by %s", ErrSessionTaken, rec.Path, rec.Session, owner.Path)
		}
	}
	if err := tx.putRecord(&rec); err != nil {
		return err
	}
	if content == nil {
		err = tx.content.Delete([]byte(rec.Path))
	} else {
		err = tx.content.Put([]byte(rec.Path), content)
	}
	if err != nil {
		return fmt.Errorf("state: put %s: %w", rec.Path, err)
	}
	if had && old.Session != rec.Session {
		if err := tx.unindex(old); err != nil {
			return err
		}
	}
	return tx.index(rec)
}

// Restamp records a new stamp for the strand at rel, keeping everything
// else: for a file that was touched or saved unchanged, so that the next
// reconcile can skip hashing it again.
func (tx *Tx) Restamp(rel string, st Stamp) error {
	rec, ok, err := tx.Get(rel)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: restamp %s", ErrNotFound, rel)
	}
	rec.Stamp = st
	return tx.putRecord(&rec)
}

// AddWrote records, keeping everything else, that knotd wrote the
// version of the strand at rel whose hash is h (see Record.Wrote).
func (tx *Tx) AddWrote(rel string, h Hash) error {
	rec, ok, err := tx.Get(rel)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: add a write of %s", ErrNotFound, rel)
	}
	rec.AddWrote(h)
	return tx.putRecord(&rec)
}

// Delete forgets the strand at rel: its record, content, session and
// breaker counts.
// Deleting a strand that has no record is not an error.
func (tx *Tx) Delete(rel string) error {
	rec, ok, err := tx.Get(rel)
	if err != nil || !ok {
		return err
	}
	key := []byte(rel)
	if err := tx.strands.Delete(key); err != nil {
		return fmt.Errorf("state: delete %s: %w", rel, err)
	}
	if err := tx.content.Delete(key); err != nil {
		return fmt.Errorf("state: delete %s: %w", rel, err)
	}
	if err := tx.ForgetBreaker(rel); err != nil {
		return err
	}
	if _, err := tx.takeQuestions(rel); err != nil {
		return err
	}
	return tx.unindex(rec)
}

// Rename moves the record and content of the strand at oldRel to newRel,
// keeping its session, resume handle, turns and history: the strand was
// moved, not replaced. It fails with ErrNotFound if oldRel has no record
// and with ErrExists if newRel has one (Delete it first to replace it).
func (tx *Tx) Rename(oldRel, newRel string) (err error) {
	if err := validatePath("rename", oldRel); err != nil {
		return err
	}
	if err := validatePath("rename", newRel); err != nil {
		return err
	}
	rec, ok, err := tx.Get(oldRel)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: rename %s", ErrNotFound, oldRel)
	}
	if oldRel == newRel {
		return nil
	}
	if _, exists, err := tx.Get(newRel); err != nil || exists {
		if err == nil {
			err = fmt.Errorf("%w: rename %s to %s", ErrExists, oldRel, newRel)
		}
		return err
	}
	content := bytes.Clone(tx.content.Get([]byte(oldRel)))
	// Its questions still wait where it moved.
	qs, err := tx.takeQuestions(oldRel)
	if err != nil {
		return err
	}
	defer func() {
		for _, q := range qs {
			if err != nil {
				return
			}
			q.Strand = newRel
			err = tx.PutQuestion(q)
		}
	}()
	// A strand that loops goes on counting where it moved.
	breaker, err := tx.Breaker(oldRel)
	if err != nil {
		return err
	}
	if err := tx.Delete(oldRel); err != nil {
		return err
	}
	if err := tx.PutBreaker(newRel, breaker); err != nil {
		return err
	}
	if p := tx.pausedValue(oldRel); p != nil {
		// A paused strand stays paused where it moved.
		if err := tx.paused.Put([]byte(newRel), bytes.Clone(p)); err != nil {
			return fmt.Errorf("state: rename %s: %w", oldRel, err)
		}
		if err := tx.paused.Delete([]byte(oldRel)); err != nil {
			return fmt.Errorf("state: rename %s: %w", oldRel, err)
		}
	}
	rec.Path = newRel
	return tx.Put(rec, content)
}

// Adopted returns when knotd first adopted the vault; ok is false if it
// never has.
func (tx *Tx) Adopted() (time.Time, bool, error) {
	v := tx.meta.Get(keyAdopted)
	if v == nil {
		return time.Time{}, false, nil
	}
	ns, n := binary.Varint(v)
	if n <= 0 {
		return time.Time{}, false, fmt.Errorf("%w: bad adoption time", ErrCorrupt)
	}
	return time.Unix(0, ns).UTC(), true, nil
}

// SetAdopted records that the vault was adopted at t. Set it in the
// transaction that writes the last adopted records, so that an adoption
// interrupted by a crash is simply done again.
func (tx *Tx) SetAdopted(t time.Time) error {
	if err := tx.meta.Put(keyAdopted, binary.AppendVarint(nil, t.UnixNano())); err != nil {
		return fmt.Errorf("state: set adopted: %w", err)
	}
	return nil
}

func (tx *Tx) putRecord(rec *Record) error {
	if err := tx.strands.Put([]byte(rec.Path), appendRecord(nil, rec)); err != nil {
		return fmt.Errorf("state: put %s: %w", rec.Path, err)
	}
	return nil
}

// index points rec's session at rec's path.
func (tx *Tx) index(rec Record) error {
	if rec.Session == "" {
		return nil
	}
	if err := tx.sessions.Put([]byte(rec.Session), []byte(rec.Path)); err != nil {
		return fmt.Errorf("state: index session of %s: %w", rec.Path, err)
	}
	return nil
}

// unindex removes rec's session from the index if it points at rec.
func (tx *Tx) unindex(rec Record) error {
	if rec.Session == "" || string(tx.sessions.Get([]byte(rec.Session))) != rec.Path {
		return nil
	}
	if err := tx.sessions.Delete([]byte(rec.Session)); err != nil {
		return fmt.Errorf("state: unindex session of %s: %w", rec.Path, err)
	}
	return nil
}

// maxNoticeKey bounds a notice key (bbolt allows 32 KiB).
const maxNoticeKey = 4096

// Noticed returns when the notice key was given; ok is false if it never
// was.
func (tx *Tx) Noticed(key string) (t time.Time, ok bool, err error) {
	v := tx.notices.Get([]byte(key))
	if v == nil {
		return time.Time{}, false, nil
	}
	if t, err = decodeNotice(v); err != nil {
		return time.Time{}, false, fmt.Errorf("%w: notice %q: %w", ErrCorrupt, key, err)
	}
	return t, true, nil
}

// Notice records that the notice key was given at t (what knotd tells the
// user once, such as a conflict copy it found), and reports whether it is
// new: false if it was given before, whose time is kept.
func (tx *Tx) Notice(key string, t time.Time) (isNew bool, err error) {
	if key == "" || len(key) > maxNoticeKey {
		return false, fmt.Errorf("state: notice: key of %d bytes", len(key))
	}
	if _, seen, err := tx.Noticed(key); err != nil || seen {
		return false, err
	}
	if err := tx.notices.Put([]byte(key), binary.AppendVarint(nil, t.UnixNano())); err != nil {
		return false, fmt.Errorf("state: notice %q: %w", key, err)
	}
	return true, nil
}

// decodeNotice decodes a notice's time.
func decodeNotice(v []byte) (time.Time, error) {
	ns, n := binary.Varint(v)
	if n <= 0 || n != len(v) {
		return time.Time{}, fmt.Errorf("%w: notice time", errCorruptValue)
	}
	return time.Unix(0, ns).UTC(), nil
}
