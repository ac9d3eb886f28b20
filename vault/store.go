package vault

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/knotd/knotd/strand"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The state store is one bbolt file, <vault>/.knot/state.db, with these
// buckets (the format this file owns):
//
//	meta      "schema" -> uvarint schemaVersion
//	          "adopted" -> varint Unix nanoseconds of first contact
//	strands   strand path -> Record, encoded by appendRecord (no content)
//	content   strand path -> the processed content, raw bytes
//	sessions  session UUID -> strand path (index for rename detection)
//	pending   run id -> Pending, encoded by appendPending (crash journal)
//
// Every change is a bbolt transaction: one B+tree update and one fsync,
// whose cost grows with log(records), not with the number of records.
const (
	// StateFile is the state store's file name inside strand.StateDir.
	StateFile     = "state.db"
	schemaVersion = 1
	// forEachChunk bounds how many records ForEach holds in one read
	// transaction.
	forEachChunk = 1024
)

var (
	bucketMeta     = []byte("meta")
	bucketStrands  = []byte("strands")
	bucketContent  = []byte("content")
	bucketSessions = []byte("sessions")
	bucketPending  = []byte("pending")
	allBuckets     = [][]byte{bucketMeta, bucketStrands, bucketContent, bucketSessions, bucketPending}

	keySchema  = []byte("schema")
	keyAdopted = []byte("adopted")
)

var (
	// ErrNotFound is wrapped by errors about a record that does not exist.
	ErrNotFound = errors.New("vault: not found")
	// ErrExists is wrapped by errors about a record that already exists.
	ErrExists = errors.New("vault: already exists")
	// ErrSessionTaken is wrapped when a record would take a session that
	// another existing strand holds (a copied note keeps its knot_session;
	// the copy needs a new one).
	ErrSessionTaken = errors.New("vault: session belongs to another strand")
	// ErrStateCorrupt is wrapped by every error about a damaged state file.
	ErrStateCorrupt = errors.New("vault: state store is damaged")
	// ErrStateVersion is wrapped when the state file was written by a newer
	// knotd whose format this one cannot read.
	ErrStateVersion = errors.New("vault: state store is from a newer knotd")
	// ErrStateBusy is wrapped when another process holds the state file.
	ErrStateBusy = errors.New("vault: state store is in use by another process")
)

// Store is knotd's memory of a vault: one Record per processed strand, the
// processed content, a session index and the journal of runs whose reply
// is not yet committed. It is safe for concurrent use; writes are
// serialised by the underlying database.
type Store struct {
	db   *bolt.DB
	path string

	// wrote is set once a write transaction has committed: Close then
	// saves the free-page list.
	wrote atomic.Bool

	// hooks lets tests stop or fail a run at the steps of its commit.
	hooks storeHooks
}

// storeHooks are fault-injection points for tests; nil fields are
// skipped. They are set right after the store is opened and only read
// afterwards.
type storeHooks struct {
	// journaled is called after a run's journal entry is durable.
	journaled func(runID string)
	// completing is called before a run's record is committed (its
	// section is in the tie-off); an error fails the commit.
	completing func(runID string) error
	// completed is called after a run's record is committed.
	completed func(runID string)
}

type storeOptions struct {
	timeout time.Duration // how long to wait for bbolt's own file lock
	noSync  bool          // tests and benchmarks only
}

// OpenStore opens or creates the state store at path (normally
// <vault>/.knot/state.db), creating its directory with mode 0700 and the
// file with mode 0600. If another process has the file open, OpenStore
// gives up after a second with ErrStateBusy; the vault lock (AcquireLock)
// is what keeps a second knotd out in the first place.
func OpenStore(path string) (*Store, error) {
	return openStore(path, storeOptions{timeout: time.Second})
}

func openStore(path string, o storeOptions) (s *Store, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("vault: open state store: %w", err)
	}
	db, err := openBolt(path, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = db.Close() // the open error is the one worth reporting
		}
	}()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, fmt.Errorf("vault: open state store: %w", err)
	}
	// An existing store is only read here: opening it writes nothing (a
	// dry run leaves the file as it was, and a free-page list that Close
	// saved stays valid until the first real commit).
	var fresh bool
	err = db.View(func(btx *bolt.Tx) (err error) {
		fresh, err = checkSchema(btx)
		return err
	})
	if err == nil && fresh {
		err = db.Update(createSchema)
	}
	if err != nil {
		if errors.Is(err, errBadSchema) {
			return nil, corruptFileError(path, err)
		}
		return nil, fmt.Errorf("vault: open state store %s: %w", path, err)
	}
	s = &Store{db: db, path: path}
	s.wrote.Store(fresh)
	return s, nil
}

// openBolt opens the bbolt file and turns its errors, and its panics on a
// damaged file, into errors that say what to do.
func openBolt(path string, o storeOptions) (db *bolt.DB, err error) {
	defer func() {
		if v := recover(); v != nil {
			db, err = nil, corruptFileError(path, fmt.Errorf("%v", v))
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{
		Timeout: o.timeout,
		// Not writing the freelist at every commit keeps a commit's cost
		// independent of how fragmented the file is (bbolt otherwise
		// sorts and writes every free page id each time); the freelist is
		// rebuilt by scanning the file when it is opened. The data pages'
		// crash safety is the same.
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
		NoSync:         o.noSync,
	})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s", ErrStateBusy, path)
	case errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("vault: open state store: %w", err)
	default:
		// bbolt reports a damaged file as ErrInvalid, ErrChecksum,
		// ErrVersionMismatch or an unwrapped "file size too small".
		return nil, corruptFileError(path, err)
	}
}

func corruptFileError(path string, err error) error {
	return fmt.Errorf("%w: %s: %v (move it aside to start afresh: knotd will adopt the vault's strands again without running agents)",
		ErrStateCorrupt, path, err)
}

// errBadSchema is wrapped by checkSchema's errors about a file that is a
// bbolt database but not a state store.
var errBadSchema = errors.New("not a knotd state store")

// checkSchema reports whether the store is new (an empty file, to be
// given its buckets by createSchema), or checks an existing store's
// schema version and buckets.
func checkSchema(btx *bolt.Tx) (fresh bool, err error) {
	meta := btx.Bucket(bucketMeta)
	if meta == nil {
		if k, _ := btx.Cursor().First(); k != nil {
			return false, fmt.Errorf("%w: no schema version", errBadSchema)
		}
		return true, nil
	}
	v, n := binary.Uvarint(meta.Get(keySchema))
	switch {
	case n <= 0 || v == 0:
		return false, fmt.Errorf("%w: bad schema version", errBadSchema)
	case v > schemaVersion:
		return false, fmt.Errorf("%w (schema %d, this knotd reads %d): upgrade knotd", ErrStateVersion, v, schemaVersion)
	}
	for _, name := range allBuckets {
		if btx.Bucket(name) == nil {
			return false, fmt.Errorf("%w: bucket %s missing", errBadSchema, name)
		}
	}
	return false, nil
}

// createSchema creates the buckets of a new store.
func createSchema(btx *bolt.Tx) error {
	if fresh, err := checkSchema(btx); err != nil || !fresh {
		return err
	}
	for _, name := range allBuckets {
		if _, err := btx.CreateBucket(name); err != nil {
			return err
		}
	}
	return btx.Bucket(bucketMeta).Put(keySchema, binary.AppendUvarint(nil, schemaVersion))
}

// Path returns the state file's path.
func (s *Store) Path() string { return s.path }

// Close closes the store. Transactions in progress finish first.
//
// If the store was written since it was opened, Close first commits the
// free-page list to the file. Commits skip that list (bbolt's
// NoFreelistSync keeps a commit's cost independent of the free pages), so
// an open must otherwise rebuild it by reading every page of the file,
// which costs the time and the resident memory of the whole file. A store
// closed this way opens by reading the list from one page; after a crash
// the next open rebuilds it as before.
func (s *Store) Close() error {
	if s.wrote.Swap(false) {
		err := s.db.Update(func(*bolt.Tx) error {
			// bbolt reads the field only under its writer lock, which
			// this transaction holds.
			s.db.NoFreelistSync = false
			return nil
		})
		if err != nil {
			_ = s.db.Close() // the commit error is the one to report
			return fmt.Errorf("vault: close state store %s: save the free-page list: %w", s.path, err)
		}
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("vault: close state store %s: %w", s.path, err)
	}
	return nil
}

// Update runs fn in one read-write transaction and commits it if fn
// returns nil: every change fn makes lands together or not at all, with
// one fsync. Batch many records into one Update (adoption, a burst of
// commits), but keep a transaction to a few thousand records, since its
// changes are held in memory until it commits. Values fn passes to Tx
// methods must not be modified before Update returns.
func (s *Store) Update(fn func(*Tx) error) error {
	var fnErr error
	err := s.db.Update(func(btx *bolt.Tx) error {
		fnErr = fn(newTx(btx))
		return fnErr
	})
	if err == nil {
		s.wrote.Store(true)
	}
	if err != nil && fnErr == nil {
		return fmt.Errorf("vault: commit state %s: %w", s.path, err)
	}
	return err
}

// View runs fn in one read-only transaction: a consistent snapshot. Write
// methods of the Tx fail. Keep it short: a long read transaction delays
// writers that need to grow the file.
func (s *Store) View(fn func(*Tx) error) error {
	var fnErr error
	err := s.db.View(func(btx *bolt.Tx) error {
		fnErr = fn(newTx(btx))
		return fnErr
	})
	if err != nil && fnErr == nil {
		return fmt.Errorf("vault: read state %s: %w", s.path, err)
	}
	return err
}

// Get returns the record of the strand at rel; ok is false if there is
// none.
func (s *Store) Get(rel string) (rec Record, ok bool, err error) {
	err = s.View(func(tx *Tx) error {
		rec, ok, err = tx.Get(rel)
		return err
	})
	return rec, ok, err
}

// Content returns the processed content of the strand at rel; ok is false
// if there is no record.
func (s *Store) Content(rel string) (content []byte, ok bool, err error) {
	err = s.View(func(tx *Tx) error {
		content, ok, err = tx.Content(rel)
		return err
	})
	return content, ok, err
}

// BySession returns the record of the strand whose session is id.
func (s *Store) BySession(id string) (rec Record, ok bool, err error) {
	err = s.View(func(tx *Tx) error {
		rec, ok, err = tx.BySession(id)
		return err
	})
	return rec, ok, err
}

// Put commits rec with its processed content; see Tx.Put.
func (s *Store) Put(rec Record, content []byte) error {
	return s.Update(func(tx *Tx) error { return tx.Put(rec, content) })
}

// Delete forgets the strand at rel; see Tx.Delete.
func (s *Store) Delete(rel string) error {
	return s.Update(func(tx *Tx) error { return tx.Delete(rel) })
}

// Rename moves a record to a new path; see Tx.Rename.
func (s *Store) Rename(oldRel, newRel string) error {
	return s.Update(func(tx *Tx) error { return tx.Rename(oldRel, newRel) })
}

// ForEach calls fn with every record, in path order, without content.
// Records are read in chunks of short read transactions and fn is called
// outside any transaction, so fn may use the Store (and do slow I/O such
// as stat) without holding up writers. A record that exists for the whole
// iteration is seen exactly once; one added or removed meanwhile may or
// may not be. ForEach stops at and returns fn's first error.
func (s *Store) ForEach(fn func(Record) error) error {
	it := s.records("")
	for {
		r, err := it.peek()
		if err != nil || r == nil {
			return err
		}
		if err := fn(*r); err != nil {
			return err
		}
		it.next()
	}
}

// recordIter reads every record in path order, a chunk at a time in one
// short read transaction each, as ForEach does; records written meanwhile
// may or may not be seen.
type recordIter struct {
	s      *Store
	prefix []byte
	buf    []Record
	i      int
	after  []byte
	end    bool
	err    error
}

// records returns an iterator over the records of the strands below the
// vault-relative directory dir, or over every record if dir is "".
func (s *Store) records(dir string) *recordIter {
	it := &recordIter{s: s, buf: make([]Record, 0, forEachChunk)}
	if dir != "" {
		it.prefix = []byte(dir + "/")
	}
	return it
}

// peek returns the current record, or nil after the last one.
func (it *recordIter) peek() (*Record, error) {
	if it.i == len(it.buf) && !it.end && it.err == nil {
		it.fill()
	}
	if it.err != nil || it.i == len(it.buf) {
		return nil, it.err
	}
	return &it.buf[it.i], nil
}

// next moves past the current record.
func (it *recordIter) next() { it.i++ }

// fill reads the next chunk of records.
func (it *recordIter) fill() {
	if n := len(it.buf); n > 0 {
		it.after = []byte(it.buf[n-1].Path)
	}
	it.buf, it.i = it.buf[:0], 0
	it.err = it.s.View(func(tx *Tx) error {
		c := tx.strands.Cursor()
		var k, v []byte
		switch {
		case it.after != nil:
			k, v = c.Seek(it.after)
			if bytes.Equal(k, it.after) {
				k, v = c.Next()
			}
		case it.prefix != nil:
			k, v = c.Seek(it.prefix)
		default:
			k, v = c.First()
		}
		for ; k != nil && bytes.HasPrefix(k, it.prefix) && len(it.buf) < forEachChunk; k, v = c.Next() {
			rec, err := decodeRecord(string(k), v)
			if err != nil {
				return fmt.Errorf("%w: record %s: %w", ErrStateCorrupt, k, err)
			}
			it.buf = append(it.buf, rec)
		}
		return nil
	})
	it.end = it.err == nil && len(it.buf) < forEachChunk
}

// Adopted returns when knotd first adopted the vault; ok is false if it
// never has (first contact).
func (s *Store) Adopted() (t time.Time, ok bool, err error) {
	err = s.View(func(tx *Tx) error {
		t, ok, err = tx.Adopted()
		return err
	})
	return t, ok, err
}

// validatePath checks that rel is a strand path, the only kind of key the
// store holds.
func validatePath(op, rel string) error {
	if !strand.IsStrandPath(rel) {
		if err := strand.ValidateRel(rel); err != nil {
			return fmt.Errorf("vault: %s: %w", op, err)
		}
		return fmt.Errorf("vault: %s %s: not a strand path", op, rel)
	}
	return nil
}
