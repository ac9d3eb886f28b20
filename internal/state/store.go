package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/strand"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The state store is one bbolt file in the vault's folder of the state
// directory (see package statedir), with these buckets (the format this
// file owns):
//
//	meta      "schema" -> uvarint schemaVersion
//	          "adopted" -> varint Unix nanoseconds of first contact
//	strands   strand path -> Record, encoded by appendRecord (no content)
//	content   strand path -> the processed content, raw bytes
//	sessions  session UUID -> strand path (index for rename detection)
//	pending   run id -> Pending, encoded by appendPending (crash journal)
//	notices   a key chosen by the caller -> varint Unix nanoseconds: what
//	          knotd has told the user once and must not tell again
//	          (schema 2; a schema 1 store gets the bucket when it opens)
//	paused    strand path -> varint Unix nanoseconds, then the reason
//	          (UTF-8): the strands the user (knotd pause) or a limit
//	          paused. Made by the first pause, not by an upgrade: the
//	          schema stays 2, so that an older knotd still opens the
//	          store (and, not knowing pauses, runs paused notes)
//	breakers  strand path -> uvarint failed runs in a row, uvarint n, then
//	          n varint Unix nanoseconds: the strand's recent runs, as
//	          many as its breaker's window needs (see Breaker). Made by
//	          the first counts stored; the schema stays 2, as for paused
//	groups    decimal process group id -> uvarint leader start time,
//	          uvarint n, n bytes of boot id, then the run id: the agents
//	          running now (see Group), which a knotd killed meanwhile
//	          leaves for the next start. Made by the first group recorded;
//	          the schema stays 2
//	questions question id (8 hex) -> JSON of Question: the calls agents
//	          held for the user's answer (permissions: ask), waiting or
//	          answered until their continuing run is journaled. Made by
//	          the first question recorded; the schema stays 2
//
// Every change is a bbolt transaction: one B+tree update and one fsync,
// whose cost grows with log(records), not with the number of records.
const (
	schemaVersion = 2
	// forEachChunk bounds how many records ForEach holds in one read
	// transaction.
	forEachChunk = 1024
)

var (
	bucketMeta      = []byte("meta")
	bucketStrands   = []byte("strands")
	bucketContent   = []byte("content")
	bucketSessions  = []byte("sessions")
	bucketPending   = []byte("pending")
	bucketNotices   = []byte("notices")
	bucketPaused    = []byte("paused")
	bucketBreakers  = []byte("breakers")
	bucketGroups    = []byte("groups")
	bucketQuestions = []byte("questions")
	allBuckets      = [][]byte{bucketMeta, bucketStrands, bucketContent, bucketSessions, bucketPending, bucketNotices}

	keySchema  = []byte("schema")
	keyAdopted = []byte("adopted")
)

var (
	// ErrNotFound is wrapped by errors about a record that does not exist.
	ErrNotFound = errors.New("state: not found")
	// ErrExists is wrapped by errors about a record that already exists.
	ErrExists = errors.New("state: already exists")
	// ErrSessionTaken is wrapped when a record would take a session that
	// another existing strand holds (a copied note keeps its knot_session;
	// the copy needs a new one).
	ErrSessionTaken = errors.New("state: session belongs to another note")
	// ErrCorrupt is wrapped by every error about a damaged state file.
	ErrCorrupt = errors.New("state: state store is damaged")
	// ErrVersion is wrapped when the state file was written by a newer
	// knotd whose format this one cannot read.
	ErrVersion = errors.New("state: state store is from a newer knotd")
	// ErrBusy is wrapped when another process holds the state file.
	ErrBusy = errors.New("state: state store is in use by another process")
)

// Store is knotd's memory of a vault: one Record per processed strand, the
// processed content, a session index and the journal of runs whose reply
// is not yet committed. It is safe for concurrent use; writes are
// serialised by the underlying database.
type Store struct {
	db   *bolt.DB
	path string

	damageOnce sync.Once
	damage     error         // the first damage found; set before damaged closes
	damaged    chan struct{} // closed when damage is first found
}

type storeOptions struct {
	timeout  time.Duration // how long to wait for bbolt's own file lock
	noSync   bool          // tests and benchmarks only
	readOnly bool          // OpenReadOnly: a shared lock, no writes
}

// Open opens or creates the state store at path, creating its directory
// with mode 0700 and the file with mode 0600. If another process has the
// file open, Open gives up after a second with ErrBusy; the vault lock
// (package statedir) is what keeps a second knotd out in the first place.
// A file that is not a state store, or whose pages are damaged, is an
// error wrapping ErrCorrupt, never a panic.
func Open(path string) (*Store, error) {
	return openStore(path, storeOptions{timeout: time.Second})
}

// ErrNotReady is wrapped by OpenReadOnly's error for a store that is
// empty, or of an older schema: only a knotd that opens it to write
// prepares it (see Open).
var ErrNotReady = errors.New("state: state store not prepared yet")

// OpenReadOnly opens the existing state store at path to read it, and
// changes nothing: it creates no file and prepares no schema (a store
// that would need it wraps ErrNotReady). It shares bbolt's file lock with
// other readers; a writer (Open) waits for it, so close it as soon as
// what it reads is read. A missing file wraps fs.ErrNotExist.
func OpenReadOnly(path string) (s *Store, err error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("state: open state store: %w", err)
	}
	if fi.Size() == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrNotReady, path)
	}
	was := debug.SetPanicOnFault(true) // see recoverDamage
	defer func() {
		debug.SetPanicOnFault(was)
		if v := recover(); v != nil { // bbolt met a damaged page
			s, err = nil, corruptFileError(path, fmt.Errorf("%v", v))
		}
	}()
	db, err := openBolt(path, storeOptions{timeout: time.Second, readOnly: true})
	if err != nil {
		return nil, err
	}
	var need schemaNeed
	err = db.View(func(btx *bolt.Tx) (err error) {
		need, err = checkSchema(btx)
		return err
	})
	switch {
	case errors.Is(err, errBadSchema):
		err = corruptFileError(path, err)
	case err != nil:
		err = fmt.Errorf("state: open state store %s: %w", path, err)
	case need != schemaReady:
		err = fmt.Errorf("%w: %s", ErrNotReady, path)
	}
	if err != nil {
		_ = db.Close() // read only; the open error is the one worth reporting
		return nil, err
	}
	return &Store{db: db, path: path, damaged: make(chan struct{})}, nil
}

func openStore(path string, o storeOptions) (s *Store, err error) {
	was := debug.SetPanicOnFault(true) // see recoverDamage
	defer func() {
		debug.SetPanicOnFault(was)
		if v := recover(); v != nil { // bbolt met a damaged page
			s, err = nil, corruptFileError(path, fmt.Errorf("%v", v))
		}
	}()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state: open state store: %w", err)
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
		return nil, fmt.Errorf("state: open state store: %w", err)
	}
	// An existing store is only read here: opening it writes nothing (a
	// dry run leaves the file as it was). bbolt itself commits once when
	// it opens a file without a free-page list, which only an older knotd
	// (one that skipped the list at each commit) leaves, after a crash.
	var need schemaNeed
	err = db.View(func(btx *bolt.Tx) (err error) {
		need, err = checkSchema(btx)
		return err
	})
	if err == nil && need != schemaReady {
		err = db.Update(prepareSchema)
	}
	if err != nil {
		if errors.Is(err, errBadSchema) {
			return nil, corruptFileError(path, err)
		}
		return nil, fmt.Errorf("state: open state store %s: %w", path, err)
	}
	s = &Store{db: db, path: path, damaged: make(chan struct{})}
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
		Timeout:      o.timeout,
		FreelistType: bolt.FreelistMapType,
		NoSync:       o.noSync,
		ReadOnly:     o.readOnly,
	})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s", ErrBusy, path)
	case errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("state: open state store: %w", err)
	default:
		// bbolt reports a damaged file as ErrInvalid, ErrChecksum,
		// ErrVersionMismatch or an unwrapped "file size too small".
		return nil, corruptFileError(path, err)
	}
}

func corruptFileError(path string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
}

// errBadSchema is wrapped by checkSchema's errors about a file that is a
// bbolt database but not a state store.
var errBadSchema = errors.New("not a knotd state store")

// schemaNeed is what a store needs before it can be used.
type schemaNeed uint8

const (
	schemaReady   schemaNeed = iota // nothing
	schemaCreate                    // an empty file: every bucket
	schemaUpgrade                   // an older schema: the buckets it lacks
)

// bucketsSince lists the buckets each schema version added over the one
// before it; version 1 had the rest of allBuckets.
var bucketsSince = map[uint64][][]byte{2: {bucketNotices}}

// checkSchema reports what the store needs: nothing, creating (an empty
// file), or an upgrade from an older schema; it checks an existing
// store's schema version and buckets.
func checkSchema(btx *bolt.Tx) (schemaNeed, error) {
	meta := btx.Bucket(bucketMeta)
	if meta == nil {
		if k, _ := btx.Cursor().First(); k != nil {
			return 0, fmt.Errorf("%w: no schema version", errBadSchema)
		}
		return schemaCreate, nil
	}
	v, n := binary.Uvarint(meta.Get(keySchema))
	switch {
	case n <= 0 || v == 0:
		return 0, fmt.Errorf("%w: bad schema version", errBadSchema)
	case v > schemaVersion:
		return 0, fmt.Errorf("%w (schema %d, this knotd reads %d): upgrade knotd", ErrVersion, v, schemaVersion)
	}
	for _, name := range allBuckets {
		if btx.Bucket(name) == nil && !addedAfter(name, v) {
			return 0, fmt.Errorf("%w: bucket %s missing", errBadSchema, name)
		}
	}
	if v < schemaVersion {
		return schemaUpgrade, nil
	}
	return schemaReady, nil
}

// addedAfter reports whether bucket name came with a schema newer than v.
func addedAfter(name []byte, v uint64) bool {
	for since, names := range bucketsSince {
		if since > v && slices.ContainsFunc(names, func(n []byte) bool { return bytes.Equal(n, name) }) {
			return true
		}
	}
	return false
}

// prepareSchema creates the buckets of a new store, or those an older
// schema lacks, and records the current schema version.
func prepareSchema(btx *bolt.Tx) error {
	need, err := checkSchema(btx)
	if err != nil || need == schemaReady {
		return err
	}
	for _, name := range allBuckets {
		if btx.Bucket(name) != nil {
			continue
		}
		if _, err := btx.CreateBucket(name); err != nil {
			return err
		}
	}
	return btx.Bucket(bucketMeta).Put(keySchema, binary.AppendUvarint(nil, schemaVersion))
}

// CopyTo writes a consistent copy of the whole store to w, as of one read
// transaction: a file that Open opens as a store. It is how another
// process reads the store while this one holds it (a dry run beside a
// running knotd).
func (s *Store) CopyTo(w io.Writer) (err error) {
	defer s.recoverDamage("copy", &err, debug.SetPanicOnFault(true))
	err = s.db.View(func(btx *bolt.Tx) error {
		_, err := btx.WriteTo(w)
		return err
	})
	if err != nil {
		err = fmt.Errorf("state: copy state %s: %w", s.path, err)
	}
	return err
}

// Close closes the store. Transactions in progress finish first.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("state: close state store %s: %w", s.path, err)
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
	return s.run("commit", s.db.Update, fn)
}

// View runs fn in one read-only transaction: a consistent snapshot. Write
// methods of the Tx fail. Keep it short: a long read transaction delays
// writers that need to grow the file.
func (s *Store) View(fn func(*Tx) error) error {
	return s.run("read", s.db.View, fn)
}

// run runs fn in the transaction that begin (bbolt's Update or View)
// runs; op names it in errors. A panic from a damaged page becomes an
// ErrCorrupt error; fn's own error is returned as it is.
func (s *Store) run(op string, begin func(func(*bolt.Tx) error) error, fn func(*Tx) error) (err error) {
	var fnErr error
	defer s.recoverDamage(op, &err, debug.SetPanicOnFault(true))
	err = begin(func(btx *bolt.Tx) error {
		tx, err := newTx(btx)
		if err != nil {
			return err
		}
		fnErr = fn(tx)
		return fnErr
	})
	if err != nil && fnErr == nil {
		err = fmt.Errorf("state: %s state %s: %w", op, s.path, err)
	}
	return err
}

// noteDamage records err if it is the first damage the store reports.
func (s *Store) noteDamage(err error) {
	if err == nil || !errors.Is(err, ErrCorrupt) {
		return
	}
	s.damageOnce.Do(func() {
		s.damage = err
		close(s.damaged)
	})
}

// Damaged returns a channel that is closed when the store first finds
// itself damaged while it is used (any error wrapping ErrCorrupt from a
// transaction): the store can no longer be trusted, and its owner should
// stop using it, move it aside and rebuild.
func (s *Store) Damaged() <-chan struct{} { return s.damaged }

// Damage returns the first damage the store found while it was used, or
// nil.
func (s *Store) Damage() error {
	select {
	case <-s.damaged:
		return s.damage
	default:
		return nil
	}
}

// recoverDamage turns a panic of bbolt's, which is how it meets a damaged
// page, into an error wrapping ErrCorrupt, and restores the goroutine's
// panic-on-fault setting to was. bbolt reads its pages straight from the
// file's memory mapping, and a damaged page can point it outside the
// mapping: with debug.SetPanicOnFault, made for programs that read
// memory-mapped files, that fault is a panic instead of a crash. bbolt
// rolls the transaction back and releases its locks before the panic
// leaves Update or View.
//
// A panic that started in knotd's own code called in the transaction (a
// bug, not a damaged file) is not damage: it goes on as the panic it is.
func (s *Store) recoverDamage(op string, err *error, was bool) {
	debug.SetPanicOnFault(was)
	if v := recover(); v != nil {
		if !panickedInStore() {
			panic(v)
		}
		*err = fmt.Errorf("%w: %s %s: %v", ErrCorrupt, op, s.path, v)
	}
	s.noteDamage(*err)
}

// storeFuncPrefix begins the name of every function of this package in a
// stack frame: its import path, whatever it is (the package may move).
var storeFuncPrefix = reflect.TypeFor[Store]().PkgPath() + "."

// panickedInStore reports whether the panic being recovered started in
// bbolt or in this package, which reads bbolt's values straight from its
// memory mapping (a damaged page, or a fault on the mapping), rather than
// in a caller's code run in the transaction:
// the first frame after runtime.gopanic that is not the runtime's or the
// standard library's says where.
func panickedInStore() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			panicking = true
		case panicking && !stdlibFrame(f.Function):
			return strings.HasPrefix(f.Function, "go.etcd.io/bbolt") || strings.HasPrefix(f.Function, storeFuncPrefix)
		}
		if !more {
			return panicking // nothing but the runtime: a fault in it
		}
	}
}

// stdlibFrame reports whether the function is the runtime's or the
// standard library's (bytes.Compare reading a damaged page, say).
func stdlibFrame(fn string) bool {
	pkg := fn
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		pkg = pkg[i:]
	}
	if i := strings.IndexByte(pkg, '.'); i >= 0 {
		pkg = fn[:len(fn)-len(pkg)+i]
	}
	return !strings.Contains(pkg, ".") // module paths have a dot; the standard library's do not
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
	it := s.Records("")
	for {
		r, err := it.Peek()
		if err != nil || r == nil {
			return err
		}
		if err := fn(*r); err != nil {
			return err
		}
		it.Next()
	}
}

// RecordIter reads every record in path order, a chunk at a time in one
// short read transaction each, as ForEach does; records written meanwhile
// may or may not be seen.
type RecordIter struct {
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
func (s *Store) Records(dir string) *RecordIter {
	it := &RecordIter{s: s, buf: make([]Record, 0, forEachChunk)}
	if dir != "" {
		it.prefix = []byte(dir + "/")
	}
	return it
}

// peek returns the current record, or nil after the last one.
func (it *RecordIter) Peek() (*Record, error) {
	if it.i == len(it.buf) && !it.end && it.err == nil {
		it.fill()
	}
	if it.err != nil || it.i == len(it.buf) {
		return nil, it.err
	}
	return &it.buf[it.i], nil
}

// next moves past the current record.
func (it *RecordIter) Next() { it.i++ }

// fill reads the next chunk of records.
func (it *RecordIter) fill() {
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
				return fmt.Errorf("%w: record %s: %w", ErrCorrupt, k, err)
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
			return fmt.Errorf("state: %s: %w", op, err)
		}
		return fmt.Errorf("state: %s %s: not a note path", op, rel)
	}
	return nil
}

// Lookup calls fn with the record of each of paths, in order (ok false
// where there is none), reading them a chunk at a time in one short read
// transaction each, not one transaction per path; fn is called outside any
// transaction. A record written meanwhile may or may not be seen.
func (s *Store) Lookup(paths []string, fn func(i int, rec Record, ok bool)) error {
	recs := make([]Record, 0, min(len(paths), forEachChunk))
	has := make([]bool, 0, min(len(paths), forEachChunk))
	for start := 0; start < len(paths); start += forEachChunk {
		chunk := paths[start:min(start+forEachChunk, len(paths))]
		recs, has = recs[:0], has[:0]
		err := s.View(func(tx *Tx) error {
			for _, p := range chunk {
				r, ok, err := tx.Get(p)
				if err != nil {
					return err
				}
				recs, has = append(recs, r), append(has, ok)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for i := range chunk {
			fn(start+i, recs[i], has[i])
		}
	}
	return nil
}
