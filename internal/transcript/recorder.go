package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/knotd/knotd/internal/durable"
	"github.com/knotd/knotd/internal/flock"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Ext is the file name extension of a transcript: <run-id>.jsonl.
const Ext = ".jsonl"

// Errors of a Recorder.
var (
	// ErrClosed is returned by Record after Close.
	ErrClosed = errors.New("transcript: recorder closed")
	// ErrBadRunID is wrapped by the error for a run id that is not a UUID
	// in its canonical lower-case form.
	ErrBadRunID = errors.New("transcript: run id is not a canonical UUID")
	// ErrNotStarted is returned when the first event of a transcript is
	// not run.started.
	ErrNotStarted = errors.New("transcript: the first event must be run.started")
	// ErrInUse is returned by Reopen when another Recorder (in this
	// process or another) has the transcript open.
	ErrInUse = errors.New("transcript: transcript is being written by another recorder")
)

// Options configure a Recorder. The zero value (or nil) is ready to use.
type Options struct {
	// Now is the clock that stamps lines; nil means time.Now.
	Now func() time.Time
	// Masker hides secrets; nil applies the argv rules only (see Masker).
	Masker *Masker
}

// Recorder writes one run's transcript. All its methods are safe for
// concurrent use: lines are written one at a time, in seq order, each with
// a single write call. A Recorder starts no goroutine.
type Recorder struct {
	path, dir, runID string
	now              func() time.Time
	mask             *Masker

	mu     sync.Mutex
	f      *os.File
	seq    int64 // seq of the last line written
	size   int64 // bytes of whole lines in the file
	buf    bytes.Buffer
	err    error // sticky: the file may end in a torn line
	closed bool
	subs   map[*Subscription]struct{}
}

// Path returns the name of a run's transcript file in dir.
func Path(dir, runID string) string { return filepath.Join(dir, runID+Ext) }

// Create creates the transcript file of run runID in dir (the vault passes
// <vault>/.knot/runs), creating dir with mode 0700 if needed. The file is
// new (O_EXCL: a run id is never reused), mode 0600, and opened for
// appending. The first event recorded must be run.started.
func Create(dir, runID string, opts *Options) (*Recorder, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("transcript: create %s: %w", dir, err)
	}
	path := Path(dir, runID)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND|openFlags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("transcript: create %s: %w", path, err)
	}
	r := newRecorder(f, dir, runID, opts)
	if err := r.lock(); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return r, nil
}

// Reopen opens an existing transcript to add more events, for example the
// tieoff.appended of a run recovered after a crash. A torn last line (the
// crash cut it) is cut off first, and seq continues after the last whole
// line. It fails with ErrInUse while another Recorder has the file open.
func Reopen(dir, runID string, opts *Options) (*Recorder, error) {
	if err := checkRunID(runID); err != nil {
		return nil, err
	}
	path := Path(dir, runID)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|openFlags, 0)
	if err != nil {
		return nil, fmt.Errorf("transcript: reopen %s: %w", path, err)
	}
	r := newRecorder(f, dir, runID, opts)
	if err := r.lock(); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	if err := r.recover(); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return r, nil
}

func newRecorder(f *os.File, dir, runID string, opts *Options) *Recorder {
	r := &Recorder{path: f.Name(), dir: dir, runID: runID, f: f, now: time.Now, subs: map[*Subscription]struct{}{}}
	if opts != nil {
		if opts.Now != nil {
			r.now = opts.Now
		}
		r.mask = opts.Masker
	}
	return r
}

// lock takes the advisory lock that tells Prune the run is being written.
// A file system without advisory locks leaves the file unlocked; Prune
// then relies on its modification-time rule alone.
func (r *Recorder) lock() error {
	err := flock.TryLock(r.f)
	switch {
	case errors.Is(err, flock.ErrLocked):
		return fmt.Errorf("%w: %s", ErrInUse, r.path)
	case err != nil && !flock.Unsupported(err):
		return fmt.Errorf("transcript: lock %s: %w", r.path, err)
	}
	return nil
}

// recover cuts a torn last line off a reopened file and finds the last seq.
func (r *Recorder) recover() error {
	info, err := r.f.Stat()
	if err != nil {
		return fmt.Errorf("transcript: reopen %s: %w", r.path, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("transcript: reopen %s: %w", r.path, fs.ErrInvalid)
	}
	end, err := lastNewline(r.f, info.Size())
	if err != nil {
		return fmt.Errorf("transcript: reopen %s: %w", r.path, err)
	}
	if end < info.Size() {
		if err := r.f.Truncate(end); err != nil {
			return fmt.Errorf("transcript: reopen %s: cut torn last line: %w", r.path, err)
		}
	}
	r.size = end
	if end == 0 {
		return nil
	}
	start, err := lastNewline(r.f, end-1)
	if err != nil {
		return fmt.Errorf("transcript: reopen %s: %w", r.path, err)
	}
	head, err := peekEnvelope(r.f, start)
	if err != nil {
		return fmt.Errorf("transcript: reopen %s: last line at byte %d: %w", r.path, start, err)
	}
	if head.RunID != r.runID {
		return fmt.Errorf("transcript: reopen %s: last line belongs to run %q", r.path, head.RunID)
	}
	r.seq = head.Seq
	return nil
}

// CheckRunID reports whether runID is a run id: a UUID in its canonical
// lower-case form (an error wrapping ErrBadRunID if not).
func CheckRunID(runID string) error { return checkRunID(runID) }

func checkRunID(runID string) error {
	u, err := uuid.Parse(runID)
	if err != nil || u.String() != runID {
		return fmt.Errorf("%w: %q", ErrBadRunID, runID)
	}
	return nil
}

// Record writes one event with payload p and returns it. The line is on
// the file (not yet synced) before Record hands it to subscribers and
// returns. A Started payload's Argv is masked; every secret value the
// Masker knows is masked anywhere in any payload. Record never waits for
// a subscriber.
//
// A failed write returns the error; if the write was partial, the torn bytes
// are cut off so later lines stay whole, and if even that fails every later
// Record returns the error.
func (r *Recorder) Record(p Payload) (Event, error) {
	if p == nil {
		return Event{}, errors.New("transcript: record a nil payload")
	}
	switch s := p.(type) {
	case Started:
		s.Argv = r.mask.Argv(s.Argv)
		p = s
	case *Started:
		c := *s
		c.Argv = r.mask.Argv(s.Argv)
		p = c
	}
	data, err := marshalNoEscape(p)
	if err != nil {
		return Event{}, fmt.Errorf("transcript: encode %s: %w", p.Type(), err)
	}
	data = r.mask.maskJSON(data)

	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return Event{}, ErrClosed
	case r.err != nil:
		return Event{}, r.err
	case r.seq == 0 && p.Type() != RunStarted:
		return Event{}, ErrNotStarted
	}
	ev := Event{Seq: r.seq + 1, RunID: r.runID, Type: p.Type(), Time: r.now().UTC(), Data: data}
	r.buf.Reset()
	if err := ev.appendLine(&r.buf); err != nil {
		return Event{}, fmt.Errorf("transcript: encode %s: %w", p.Type(), err)
	}
	n, err := r.f.Write(r.buf.Bytes())
	if err != nil {
		err = fmt.Errorf("transcript: write %s: %w", r.path, err)
		if n > 0 {
			if terr := r.f.Truncate(r.size); terr != nil {
				r.err = fmt.Errorf("transcript: %s may end in a torn line: %w", r.path, errors.Join(err, terr))
				return Event{}, r.err
			}
		}
		return Event{}, err
	}
	r.size += int64(n)
	r.seq = ev.Seq
	r.broadcast(ev)
	return ev, nil
}

// Close syncs the transcript to disk, closes it and closes every
// subscription's channel. Calling Close again does nothing and returns nil.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	for s := range r.subs {
		close(s.c)
	}
	r.subs = nil
	var errs []error
	if err := r.f.Sync(); err != nil {
		errs = append(errs, fmt.Errorf("transcript: sync %s: %w", r.path, err))
	}
	if err := r.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("transcript: close %s: %w", r.path, err))
	}
	if err := durable.SyncDir(r.dir); err != nil {
		errs = append(errs, fmt.Errorf("transcript: sync %s: %w", r.dir, err))
	}
	return errors.Join(errs...)
}
