package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// loop is the state of one Run. It is owned by Run's goroutine: nothing in
// it is shared, so nothing in it is locked (the Stats counters are atomic
// and live in the Watcher).
type loop struct {
	w          *Watcher
	root       string
	rules      *Rules
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
	if err := l.resync(ctx, ""); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	st := l.w.Stats()
	l.log.Info("watcher: watching", "root", l.root, "watched", st.Watched, "polled", st.Polled,
		"took", time.Since(start).Round(time.Millisecond))
	l.enqueue(fullRescan)

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
			l.ready = l.ready[1:]
			delete(l.queued, head)
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
				if err := l.resync(ctx, h.Path); err != nil {
					return err
				}
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

// enqueue puts a settled hint in line for the consumer. A queued full
// rescan covers everything else; too long a line becomes one.
func (l *loop) enqueue(h Hint) {
	switch {
	case l.queued[fullRescan], l.queued[h]:
		return
	case h.Full() || len(l.ready) >= l.maxPending:
		h = fullRescan
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
			return fmt.Errorf("%w: %s", ErrRootGone, l.root)
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
	if isIgnoreFile(path.Base(rel)) {
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

// addTree watches a directory that appeared and everything below it,
// adding each watch before listing its directory, and records a hint for
// every file found: they may have been written before the watch existed.
func (l *loop) addTree(ctx context.Context, rel string, now time.Time) {
	err := l.rules.walk(l.root, rel, func(r string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return fs.SkipAll
		}
		if err != nil {
			l.walkError(r, err)
			return nil
		}
		if d.IsDir() {
			return l.watchDir(r, d)
		}
		if l.filter(r) {
			l.pend.add(Hint{Path: r}, now)
		}
		return nil
	}, l.listed, false)
	if err != nil {
		l.log.Warn("watcher: walk new directory", "path", rel, "err", err)
	}
	l.checkFDBudget()
}

// resync brings the watches under dir in line with the disk and the ignore
// files (which it rereads): it watches directories not watched yet and
// drops those that are gone or now ignored. It runs before a directory
// hint is sent, so the consumer's rescan happens with the watches in
// place. It fails only if the vault root cannot be walked.
func (l *loop) resync(ctx context.Context, dir string) error {
	if dir != "" {
		fi, err := os.Lstat(l.abs(dir))
		_, parentKnown := l.dirs[parentDir(dir)]
		if err != nil || !fi.IsDir() || !parentKnown || l.rules.Ignored(dir, true) {
			l.dropTree(dir)
			return nil
		}
	}
	seen := make(map[string]bool)
	var rootErr error
	err := l.rules.walk(l.root, dir, func(r string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return fs.SkipAll
		}
		if err != nil {
			if r == "" {
				rootErr = err
				return err
			}
			l.walkError(r, err)
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		seen[r] = true
		if st := l.dirs[r]; st != nil {
			fi, err := d.Info()
			if err == nil && os.SameFile(st.id, fi) {
				return nil
			}
			l.forgetDir(r) // replaced: watch the new one
		}
		return l.watchDir(r, d)
	}, l.listed, false)
	if rootErr != nil {
		return fmt.Errorf("watcher: walk vault: %w", rootErr)
	}
	if err != nil {
		l.log.Warn("watcher: resync", "path", dir, "err", err)
	}
	if ctx.Err() != nil {
		return nil
	}
	for d := range l.dirs {
		if isWithin(d, dir) && !seen[d] {
			l.dropTree(d)
		}
	}
	l.checkFDBudget()
	return nil
}

// watchDir adds the kernel watch for one directory, or polls it if the
// kernel refuses. It returns fs.SkipDir if the directory cannot be used.
func (l *loop) watchDir(rel string, d fs.DirEntry) error {
	if l.dirs[rel] != nil {
		return nil
	}
	fi, err := d.Info()
	if err != nil {
		return fs.SkipDir // gone already; its parent's event will say so
	}
	os.SameFile(fi, fi) // on Windows, fixes the file's identity now rather than on first comparison
	err = l.b.Add(l.abs(rel))
	switch {
	case err == nil:
		l.dirs[rel] = &dirState{id: fi, watched: true}
		l.w.watched.Add(1)
		l.fds++
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fs.SkipDir
	case errors.Is(err, fs.ErrPermission):
		l.log.Warn("watcher: cannot watch directory, skipping it", "path", rel, "err", err)
		return fs.SkipDir
	case isLimitError(err):
		l.logLimit(err)
	default:
		l.log.Warn("watcher: cannot watch directory, polling it instead", "path", rel, "err", err)
	}
	l.startPolling(rel, fi)
	return nil
}

// listed records how many entries a directory listing had.
func (l *loop) listed(rel string, n int) {
	if st := l.dirs[rel]; st != nil && st.watched {
		l.fds += n - st.entries
		st.entries = n
	}
}

// dropTree forgets dir and every known directory below it, removing their
// watches and the ignore files read there.
func (l *loop) dropTree(dir string) {
	for d := range l.dirs {
		if isWithin(d, dir) {
			l.forgetDir(d)
		}
	}
	if dir != "" {
		l.rules.forget(dir)
	}
}

// forgetDir removes one directory's watch (or stops polling it).
func (l *loop) forgetDir(rel string) {
	st := l.dirs[rel]
	if st == nil {
		return
	}
	delete(l.dirs, rel)
	if !st.watched {
		l.w.polled.Add(-1)
		return
	}
	l.w.watched.Add(-1)
	l.fds -= 1 + st.entries
	// The kernel drops the watch of a deleted directory by itself, so
	// "no such watch" is the common, expected answer here.
	if err := l.b.Remove(l.abs(rel)); err != nil && !errors.Is(err, fsnotify.ErrNonExistentWatch) {
		l.log.Debug("watcher: remove watch", "path", rel, "err", err)
	}
}

func (l *loop) walkError(rel string, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		return // removed while walking: its removal event follows
	}
	l.log.Warn("watcher: walk", "path", rel, "err", err)
}

// logLimit writes the watch-limit message, once per Run.
func (l *loop) logLimit(err error) {
	if l.limitLogged {
		return
	}
	l.limitLogged = true
	l.log.Error(limitMessage(err, int(l.w.watched.Load()), l.poll))
}

// checkFDBudget warns once when kqueue's descriptors (one per watched
// directory and per entry in it) near the process limit.
func (l *loop) checkFDBudget() {
	if !kqueueFDs || l.fdWarned {
		return
	}
	limit, ok := fdLimit()
	if !ok || uint64(l.fds) < limit/10*8 {
		return
	}
	l.fdWarned = true
	l.log.Warn(fmt.Sprintf("watcher: kqueue uses about %d of the %d file descriptors allowed (ulimit -n): "+
		"one per watched directory and per file in it; raise the limit (ulimit -n, or launchd's "+
		"SoftResourceLimits/NumberOfFiles) or use --poll; directories that cannot be watched will be polled",
		l.fds, limit))
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
	if r == ".." || strings.HasPrefix(r, "../") || validRel(r) != nil {
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
