package state

import "fmt"

// Check verifies the store's invariants and returns the first violation
// as an error wrapping ErrCorrupt:
//
//   - every record, journal entry and notice decodes, and every key is a
//     strand path (records, content) or a run id (journal);
//   - the session index and the records agree: each record's session
//     points back at it, and each index entry names a record that holds
//     that session;
//   - no content is kept without its record; with content set, every
//     kept content also matches its record's hash.
//
// It reads the whole store in one read transaction (with content, every
// processed note too), so it is for tests, and for opening a store whose
// last use ended in a crash or that another program may have damaged.
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
	sessions := 0
	err := tx.strands.ForEach(func(k, v []byte) error {
		rel := string(k)
		if err := validatePath("check", rel); err != nil {
			return bad("record key %q: %v", k, err)
		}
		rec, err := decodeRecord(rel, v)
		if err != nil {
			return bad("record %s: %v", rel, err)
		}
		if rec.Session != "" {
			sessions++
			if p := tx.sessions.Get([]byte(rec.Session)); string(p) != rel {
				return bad("record %s holds session %s, which the index gives to %q", rel, rec.Session, p)
			}
		}
		raw := tx.content.Get(k)
		if content && raw != nil && HashOf(raw) != rec.Hash {
			return bad("content of %s does not match its record's hash", rel)
		}
		return nil
	})
	if err != nil {
		return err
	}
	indexed := 0
	err = tx.sessions.ForEach(func(k, v []byte) error {
		indexed++
		rec, ok, err := tx.Get(string(v))
		if err != nil {
			return err
		}
		if !ok || rec.Session != string(k) {
			return bad("the index gives session %s to %q, whose record does not hold it", k, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if indexed != sessions {
		return bad("%d sessions indexed for %d records holding one", indexed, sessions)
	}
	err = tx.content.ForEach(func(k, _ []byte) error {
		if tx.strands.Get(k) == nil {
			return bad("content of %q kept without its record", k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := tx.Pendings(); err != nil {
		return err
	}
	return tx.notices.ForEach(func(k, v []byte) error {
		if _, err := decodeNotice(v); err != nil || len(k) == 0 {
			return bad("notice %q: malformed", k)
		}
		return nil
	})
}
