package watcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/strand"
)

// addTree watches a directory that appeared and everything below it,
// adding each watch before listing its directory, and records a hint for
// every file found: they may have been written before the watch existed.
func (l *loop) addTree(ctx context.Context, rel string, now time.Time) {
	err := l.rules.Walk(l.root, rel, ignore.WalkOptions{AncestorsLoaded: true, Listed: l.listed}, func(r string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return fs.SkipAll
		}
		if err != nil {
			l.walkError(r, err)
			return nil
		}
		if d.IsDir() {
			fi, err := d.Info()
			return l.watchDir(r, fi, err)
		}
		if l.filter(r) {
			l.pend.add(Hint{Path: r}, now)
		}
		return nil
	})
	if err != nil {
		l.log.Warn("watcher: walk new directory", "path", rel, "err", err)
	}
	l.checkFDBudget()
}

// resync brings the watches under dir in line with the disk and the ignore
// files (which it rereads): it watches directories not watched yet and
// drops those that are gone or now ignored. It runs before a directory
// hint is sent, so the consumer's rescan happens with the watches in
// place. For the whole vault (dir "") it returns the listing of the files
// it saw, unless the walk stopped early. It fails only if the vault root
// cannot be walked.
func (l *loop) resync(ctx context.Context, dir string) (*Listing, error) {
	if dir != "" {
		fi, err := os.Lstat(l.abs(dir))
		_, parentKnown := l.dirs[parentDir(dir)]
		if err != nil || !fi.IsDir() || !parentKnown || l.rules.Ignored(dir, true) {
			l.dropTree(dir)
			return nil, nil
		}
	}
	var listing *Listing
	if dir == "" {
		listing = &Listing{}
	}
	seen := make(map[string]bool)
	var rootErr error
	// The walk lists several directories at once; mu guards the loop's
	// state, which the callbacks share until the walk returns. What
	// costs (looking at an entry) happens outside it.
	var mu sync.Mutex
	listed := func(rel string, n int) {
		mu.Lock()
		defer mu.Unlock()
		l.listed(rel, n)
	}
	err := l.rules.Walk(l.root, dir, ignore.WalkOptions{Concurrent: true, AncestorsLoaded: true, Listed: listed}, func(r string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return fs.SkipAll
		}
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			if r == "" {
				rootErr = err
				return err
			}
			l.walkError(r, err)
			return nil
		}
		if !d.IsDir() {
			if listing != nil && l.filter(r) {
				if info, err := d.Info(); err == nil {
					mu.Lock()
					listing.Files = append(listing.Files, ListedFile{Path: r, Info: info})
					mu.Unlock()
				}
			}
			return nil
		}
		fi, ierr := d.Info()
		mu.Lock()
		defer mu.Unlock()
		seen[r] = true
		if st := l.dirs[r]; st != nil {
			if ierr == nil && os.SameFile(st.id, fi) {
				return nil
			}
			l.forgetDir(r) // replaced: watch the new one
		}
		return l.watchDir(r, fi, ierr)
	})
	if rootErr != nil {
		return nil, fmt.Errorf("watcher: walk vault: %w", rootErr)
	}
	if err != nil {
		l.log.Warn("watcher: resync", "path", dir, "err", err)
		listing = nil // the walk stopped early: it saw only part of the vault
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	for d := range l.dirs {
		if strand.Within(d, dir) && !seen[d] {
			l.dropTree(d)
		}
	}
	l.checkFDBudget()
	return listing, nil
}

// watchDir adds the kernel watch for one directory, or polls it if the
// kernel refuses; fi and err are what lstat said of it. It returns
// fs.SkipDir if the directory cannot be used.
func (l *loop) watchDir(rel string, fi fs.FileInfo, err error) error {
	if l.dirs[rel] != nil {
		return nil
	}
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
	// kqueue may have registered the directory before failing on a file
	// in it: release whatever part was made.
	l.removeWatch(rel)
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
		if strand.Within(d, dir) {
			l.forgetDir(d)
		}
	}
	if dir != "" {
		l.rules.Forget(dir)
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
	l.removeWatch(rel)
}

// removeWatch asks the kernel watcher to stop watching rel. The kernel
// drops the watch of a deleted directory by itself, so "no such watch" is
// the common, expected answer; anything else is only worth a debug line,
// since the directory is forgotten either way.
func (l *loop) removeWatch(rel string) {
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
