package state

import (
	"bytes"
	"fmt"
)

// Check verifies the store's invariants and returns the first violation
// as an error wrapping ErrCorrupt:
//
//   - every record, journal entry and notice decodes, and every key is a
//     strand path (records, content) or a run id (journal);
//   - the session index and the records agree: each record's session
//     points back at it, and each index entry names a record that holds
//     that session;
//   - with content set: no content is kept without its record, and every
//     kept content matches its record's hash (this reads every processed
//     note: the content is most of the file).
//
// It reads the whole store in one read transaction, each bucket in key
// order (with content, every processed note too), so it is for tests, and
// for opening a store whose last use did not end cleanly.
func (s *Store) Check(content bool) error {
	return s.View(func(tx *Tx) error { return tx.check(content) })
}

func (tx *Tx) check(content bool) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	if _, _, err := tx.Adopted(); err != nil {
		return err
	}
	// Records and content share their keys: walk both in order, side by
	// side, rather than look each one up.
	held := make(map[string]string) // session -> the path whose record holds it
	var ck, cv []byte
	cc := tx.content.Cursor()
	if content {
		ck, cv = cc.First()
	}
	sc := tx.strands.Cursor()
	for k, v := sc.First(); k != nil; k, v = sc.Next() {
		rel := string(k)
		if err := validatePath("check", rel); err != nil {
			return bad("record key %q: %v", k, err)
		}
		rec, err := decodeRecord(rel, v)
		if err != nil {
			return bad("record %s: %v", rel, err)
		}
		if rec.Session != "" {
			if other, dup := held[rec.Session]; dup {
				return bad("records %s and %s hold the same session %s", other, rel, rec.Session)
			}
			held[rec.Session] = rel
		}
		if ck != nil && bytes.Compare(ck, k) < 0 {
			return bad("content of %q kept without its record", ck)
		}
		if ck != nil && bytes.Equal(ck, k) {
			if HashOf(cv) != rec.Hash {
				return bad("content of %s does not match its record's hash", rel)
			}
			ck, cv = cc.Next()
		}
	}
	if ck != nil {
		return bad("content of %q kept without its record", ck)
	}
	indexed := 0
	err := tx.sessions.ForEach(func(k, v []byte) error {
		indexed++
		if held[string(k)] != string(v) {
			return bad("the index gives session %s to %q, whose record does not hold it", k, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if indexed != len(held) {
		for session, rel := range held {
			if string(tx.sessions.Get([]byte(session))) != rel {
				return bad("record %s holds session %s, which the index gives to %q", rel, session, tx.sessions.Get([]byte(session)))
			}
		}
	}
	if _, err := tx.Pendings(); err != nil {
		return err
	}
	err = tx.notices.ForEach(func(k, v []byte) error {
		if _, err := decodeNotice(v); err != nil || len(k) == 0 {
			return bad("notice %q: malformed", k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err = tx.Paused(); err != nil {
		return err
	}
	if err := tx.checkBreakers(); err != nil {
		return err
	}
	if _, err = tx.Groups(); err != nil {
		return err
	}
	_, err = tx.Questions()
	return err
}
