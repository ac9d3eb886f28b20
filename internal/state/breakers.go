package state

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Breaker is what a strand's breakers count (see the vault's breakers):
// the times of its recent runs, oldest first, and its failed runs in a
// row. Kept in the store so that a restart does not forget a note that
// loops; the caller keeps only what its window needs.
type Breaker struct {
	Runs   []time.Time
	Failed int
}

// Breaker returns the counts of the strand at rel; zero when it has none.
func (tx *Tx) Breaker(rel string) (Breaker, error) {
	if tx.breakers == nil {
		return Breaker{}, nil
	}
	v := tx.breakers.Get([]byte(rel))
	if v == nil {
		return Breaker{}, nil
	}
	return decodeBreaker(rel, v)
}

// PutBreaker stores the counts of the strand at rel (zero counts remove
// them). The bucket is made by the first counts stored, and the schema
// stays 2: an older knotd opens the store and ignores the bucket.
func (tx *Tx) PutBreaker(rel string, b Breaker) error {
	if err := validatePath("breaker", rel); err != nil {
		return err
	}
	if len(b.Runs) == 0 && b.Failed == 0 {
		return tx.ForgetBreaker(rel)
	}
	if b.Failed < 0 {
		return fmt.Errorf("state: breaker %s: %d failures", rel, b.Failed)
	}
	if tx.breakers == nil {
		bk, err := tx.tx.CreateBucket(bucketBreakers)
		if err != nil {
			return fmt.Errorf("state: breaker %s: %w", rel, err)
		}
		tx.breakers = bk
	}
	v := binary.AppendUvarint(nil, uint64(b.Failed))
	v = binary.AppendUvarint(v, uint64(len(b.Runs)))
	for _, t := range b.Runs {
		v = binary.AppendVarint(v, t.UnixNano())
	}
	if err := tx.breakers.Put([]byte(rel), v); err != nil {
		return fmt.Errorf("state: breaker %s: %w", rel, err)
	}
	return nil
}

// ForgetBreaker removes the counts of the strand at rel.
func (tx *Tx) ForgetBreaker(rel string) error {
	if tx.breakers == nil || tx.breakers.Get([]byte(rel)) == nil {
		return nil
	}
	if err := tx.breakers.Delete([]byte(rel)); err != nil {
		return fmt.Errorf("state: breaker %s: %w", rel, err)
	}
	return nil
}

// checkBreakers decodes every breaker's counts (Check).
func (tx *Tx) checkBreakers() error {
	if tx.breakers == nil {
		return nil
	}
	return tx.breakers.ForEach(func(k, v []byte) error {
		_, err := decodeBreaker(string(k), v)
		return err
	})
}

func decodeBreaker(rel string, v []byte) (Breaker, error) {
	bad := fmt.Errorf("%w: breaker of %q: %w", ErrCorrupt, rel, errCorruptValue)
	if validatePath("breaker", rel) != nil {
		return Breaker{}, bad
	}
	failed, n := binary.Uvarint(v)
	if n <= 0 || failed > 1<<31 {
		return Breaker{}, bad
	}
	v = v[n:]
	count, n := binary.Uvarint(v)
	// Each time takes a byte at least: a count beyond what is left is
	// damage, not an allocation to make.
	if n <= 0 || count > uint64(len(v)-n) {
		return Breaker{}, bad
	}
	v = v[n:]
	b := Breaker{Failed: int(failed), Runs: make([]time.Time, 0, count)}
	for range count {
		ns, n := binary.Varint(v)
		if n <= 0 {
			return Breaker{}, bad
		}
		b.Runs = append(b.Runs, time.Unix(0, ns).UTC())
		v = v[n:]
	}
	if len(v) != 0 {
		return Breaker{}, bad
	}
	return b, nil
}
