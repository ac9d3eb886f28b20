package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/knotd/knotd/internal/ignore"
)

// Defaults for the Watcher fields left zero.
const (
	DefaultQuiet   = 2 * time.Second
	defaultMaxWait = 15 * time.Second
)

// Defaults of the watcher's inner limits (tests set them lower).
const (
	defaultPollInterval = 10 * time.Second
	defaultMaxPending   = 10000
)

// errRootGone is returned by Run when the vault directory itself is removed
// or renamed while it is watched.
var errRootGone = errors.New("watcher: vault directory removed or renamed")

// Watcher watches a vault recursively and sends settled Hints. It watches
// directories only (never single files), adding a watch for each directory
// that the Rules do not ignore, and walks every directory that appears so
// that files created before its watch existed are reported too.
//
// Configure it by its fields, then call Run once; the fields must not
// change while Run runs.
type Watcher struct {
	// Root is the vault directory.
	Root string
	// Quiet is how long a path must see no events before its Hint is sent
	// (DefaultQuiet when zero).
	Quiet time.Duration
	// MaxWait bounds how long a path that keeps changing waits for its
	// Hint (defaultMaxWait when zero; never less than Quiet).
	MaxWait time.Duration
	// Filter reports whether a file (a vault-relative slash path) is of
	// interest, such as a strand name; other files produce no Hints.
	// Directories are not filtered. Nil means every file.
	Filter func(rel string) bool
	// Rules decides what is ignored; ignored directories are never
	// watched and ignored files produce no Hints. Nil means a zero Rules
	// (built-in ignores and the ignore files found in the vault). The
	// watcher loads and reloads ignore files into it; sharing it with a
	// reconcile walk is safe.
	Rules *ignore.Rules
	// Logger receives the watcher's messages; nil discards them.
	Logger *slog.Logger

	// pollInterval is how often directories that could not be watched
	// (the kernel's watch limit was reached) are listed instead
	// (defaultPollInterval when zero).
	pollInterval time.Duration
	// maxPending is how many distinct paths may wait for their quiet
	// period before they collapse into one full rescan
	// (defaultMaxPending when zero).
	maxPending int

	watched atomic.Int64 // what counts returns
	polled  atomic.Int64

	// newBackend creates the kernel watcher; nil means fsnotify. Tests
	// substitute fakes here.
	newBackend func() (backend, error)
}

// counts is what a Watcher is doing, for its log and tests.
type counts struct {
	// Watched is the number of directories the kernel watches.
	Watched int
	// Polled is the number of directories listed every pollInterval
	// because they could not be watched.
	Polled int
}

// counts returns the current counts. It is safe to call while Run runs.
func (w *Watcher) counts() counts {
	return counts{Watched: int(w.watched.Load()), Polled: int(w.polled.Load())}
}

// Run watches until ctx ends, sending Hints on out, and closes out when it
// returns. It blocks; the caller starts it (usually in its own goroutine)
// and every goroutine Run starts has ended when it returns.
//
// Run first watches the whole tree, then sends a full rescan (Hint{Dir:
// true}): a consumer that reconciles on it misses nothing that changed
// before the watches existed. Afterwards each path's Hint is sent once the
// path has been quiet for Quiet, or MaxWait after its first event. Sends
// block until the consumer receives, while events keep being absorbed.
//
// Run returns nil when ctx ends, errRootGone if the vault directory goes
// away, or an error if watching cannot start.
func (w *Watcher) Run(ctx context.Context, out chan<- Hint) (err error) {
	defer close(out)
	defer w.watched.Store(0)
	defer w.polled.Store(0)

	l, err := w.newLoop()
	if err != nil {
		return err
	}
	newBackend := w.newBackend
	if newBackend == nil {
		newBackend = newFsnotifyBackend
	}
	l.b, err = newBackend()
	switch {
	case err != nil && isLimitError(err):
		l.logLimit(err)
		l.b = pollOnly{err}
	case err != nil:
		return fmt.Errorf("watcher: start: %w", err)
	}
	defer func() {
		if cerr := l.b.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("watcher: stop: %w", cerr)
		}
	}()
	return l.run(ctx, out)
}

// newLoop checks the configuration and prepares the loop state.
func (w *Watcher) newLoop() (*loop, error) {
	root, err := filepath.Abs(w.Root)
	if err != nil {
		return nil, fmt.Errorf("watcher: root %s: %w", w.Root, err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("watcher: root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("watcher: root %s: not a directory", root)
	}
	if w.Quiet < 0 || w.MaxWait < 0 || w.pollInterval < 0 || w.maxPending < 0 {
		return nil, fmt.Errorf("watcher: negative Quiet or MaxWait")
	}
	l := &loop{
		w:      w,
		root:   root,
		rules:  w.Rules,
		filter: w.Filter,
		log:    w.Logger,
		poll:   or(w.pollInterval, defaultPollInterval),
		dirs:   make(map[string]*dirState),
		queued: make(map[Hint]bool),
	}
	l.maxPending = w.maxPending
	if l.maxPending == 0 {
		l.maxPending = defaultMaxPending
	}
	l.pend = newPending(or(w.Quiet, DefaultQuiet), or(w.MaxWait, defaultMaxWait), l.maxPending)
	if l.rules == nil {
		l.rules = &ignore.Rules{}
	}
	if l.filter == nil {
		l.filter = func(string) bool { return true }
	}
	if l.log == nil {
		l.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return l, nil
}

func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
