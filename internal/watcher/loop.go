package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/strand"
)

// loop is the state of one Run. It is owned by Run's goroutine: nothing in
// it is shared, so nothing in it is locked (the counters are atomic
// and live in the Watcher). The one exception is a resync's walk, whose
// callbacks run in several goroutines under a lock of the resync's own
// until the walk returns.
type loop struct {
	w          *Watcher
	root       string
	rules      *ignore.Rules
	filter     func(rel string) bool
	log        *slog.Logger
	b          backend
	poll       time.Duration
	maxPending int

	pend   *pending
	dirs   map[string]*dirState // every directory watched or polled, by vault-relative path
	ready  []Hint               // settled, waiting for the consumer
	queued map[Hint]bool        // what is in ready

	fds         int // estimated descriptors used by watches (kqueue only)
	limitLogged bool
	fdWarned    bool
}

// dirState is one known directory.
type dirState struct {
	id      os.FileInfo         // what was watched, to notice a directory replaced under the same name
	watched bool                // by the kernel; otherwise polled
	entries int                 // entries at the last listing (kqueue opens one descriptor each)
	snap    map[string]snapshot // polled directories: the last listing
}

func (l *loop) run(ctx context.Context, out chan<- Hint) error {
	start := time.Now()
	listing, err := l.resync(ctx, "")
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	st := l.w.counts()
	l.log.Info("watcher: watching", "root", l.root, "watched", st.Watched, "polled", st.Polled,
		"took", time.Since(start).Round(time.Millisecond))
	l.enqueue(Hint{Dir: true, Listing: listing})

	timer := time.NewTimer(0)
	timer.Stop()
	defer timer.Stop()
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		var tick <-chan time.Time
		switch polled := l.w.polled.Load() > 0; {
		case polled && ticker == nil:
			ticker = time.NewTicker(l.poll)
			tick = ticker.C
		case polled:
			tick = ticker.C
		case ticker != nil:
			ticker.Stop()
			ticker = nil
		}
		var send chan<- Hint
		var head Hint
		if len(l.ready) > 0 {
			send, head = out, l.ready[0]
		}

		select {
		case <-ctx.Done():
			return nil
		case send <- head:
			l.sent()
		case ev, ok := <-l.b.Events():
			if !ok {
				return errors.New("watcher: event channel closed unexpectedly")
			}
			if err := l.handle(ctx, ev); err != nil {
				return err
			}
		case err, ok := <-l.b.Errors():
			if !ok {
				return errors.New("watcher: error channel closed unexpectedly")
			}
			l.lost(err)
		case <-timer.C:
		case <-tick:
			l.pollDirs(ctx)
		}

		now := time.Now()
		for _, h := range l.pend.due(now) {
			if h.Dir {
				listing, err := l.resync(ctx, h.Path)
				if err != nil {
					return err
				}
				h.Listing = listing
			}
			l.enqueue(h)
		}
		if t, ok := l.pend.next(); ok {
			timer.Reset(t.Sub(now))
		} else {
			timer.Stop()
		}
	}
}

// sent takes the hint at the head of the line off it, once the consumer
// has it. The line's array keeps no copy: a listing is large.
func (l *loop) sent() {
	delete(l.queued, l.ready[0])
	l.ready[0] = Hint{}
	l.ready = l.ready[1:]
}

// enqueue puts a settled hint in line for the consumer. A queued full
// rescan covers everything else; too long a line becomes one. A queued
// full rescan that carries a listing covers nothing that comes after it:
// the listing is older than the later hint.
func (l *loop) enqueue(h Hint) {
	switch {
	case l.queued[fullRescan], l.queued[h]:
		return
	case h.Full() || len(l.ready) >= l.maxPending:
		if !h.Full() {
			h = fullRescan
		}
		clear(l.ready)
		l.ready = l.ready[:0]
		clear(l.queued)
	}
	l.ready = append(l.ready, h)
	l.queued[h] = true
}

// lost handles an error from the kernel watcher: events may have been
// lost, so the whole vault is rescanned (and the watches resynced).
func (l *loop) lost(err error) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		l.log.Warn("watcher: the kernel's event queue overflowed and events were lost; rescanning the whole vault", "err", err)
	} else {
		l.log.Warn("watcher: event error; rescanning the whole vault in case events were lost", "err", err)
	}
	l.pend.add(fullRescan, time.Now())
}

// handle turns one fsnotify event into pending hints and watch changes.
func (l *loop) handle(ctx context.Context, ev fsnotify.Event) error {
	if ev.Op == fsnotify.Chmod || ev.Op == 0 {
		return nil // attribute changes only: content is what matters
	}
	rel, ok := l.rel(ev.Name)
	if !ok {
		l.log.Debug("watcher: event outside the vault", "path", ev.Name)
		return nil
	}
	if rel == "" {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			return fmt.Errorf("%w: %s", errRootGone, l.root)
		}
		return nil
	}
	l.change(ctx, rel)
	return nil
}

// change looks at what is at rel now, after an event (or a difference
// seen by polling) there, and records what follows: a file hint, a new
// directory watched and walked, a vanished or replaced directory dropped
// and rescanned, or an ignore file reloaded.
func (l *loop) change(ctx context.Context, rel string) {
	now := time.Now()
	parent := parentDir(rel)
	if ignore.IsFile(path.Base(rel)) {
		// Reloaded and resynced when the rescan of its directory is due.
		l.pend.add(Hint{Path: parent, Dir: true}, now)
		return
	}
	fi, err := os.Lstat(l.abs(rel))
	isDir := err == nil && fi.IsDir()
	if st := l.dirs[rel]; st != nil {
		if isDir && os.SameFile(st.id, fi) {
			return // the directory we know; its own events come from its watch
		}
		// Gone, or replaced by another directory or a file.
		l.dropTree(rel)
		l.pend.add(Hint{Path: rel, Dir: true}, now)
	}
	if isDir {
		if _, ok := l.dirs[parent]; ok && !l.rules.Ignored(rel, true) {
			l.addTree(ctx, rel, now)
		}
		return
	}
	if !l.rules.Ignored(rel, false) && l.filter(rel) {
		l.pend.add(Hint{Path: rel}, now)
	}
}

// rel converts an absolute event path to a vault-relative slash path; ""
// is the root itself.
func (l *loop) rel(abs string) (string, bool) {
	r, err := filepath.Rel(l.root, abs)
	if err != nil {
		return "", false
	}
	r = filepath.ToSlash(r)
	if r == "." {
		return "", true
	}
	if r == ".." || strings.HasPrefix(r, "../") || strand.ValidateRel(r) != nil {
		return "", false
	}
	return r, true
}

func (l *loop) abs(rel string) string {
	return filepath.Join(l.root, filepath.FromSlash(rel))
}

// parentDir returns the vault-relative directory holding rel ("" for the
// root).
func parentDir(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}
