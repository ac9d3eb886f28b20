package watcher

import (
	"context"
	"io/fs"
	"os"
	"path"
	"slices"
	"time"

	"github.com/knotd/knotd/internal/ignore"
)

// snapshot is what polling remembers of one directory entry.
type snapshot struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
}

func (s snapshot) same(o snapshot) bool {
	return s.size == o.size && s.mtime.Equal(o.mtime) && s.mode == o.mode
}

// startPolling polls a directory the kernel would not watch: it is listed
// now, and every pollInterval each entry added, removed or changed (size,
// modification time or type) is handled as if an event had said so. A
// change that keeps size and modification time is not seen.
func (l *loop) startPolling(rel string, id os.FileInfo) {
	snap, _ := l.list(rel)
	l.dirs[rel] = &dirState{id: id, snap: snap}
	l.w.polled.Add(1)
}

// pollDirs lists every polled directory and handles what changed.
func (l *loop) pollDirs(ctx context.Context) {
	var polled []string
	for rel, st := range l.dirs {
		if !st.watched {
			polled = append(polled, rel)
		}
	}
	slices.Sort(polled) // parents first: a vanished parent takes its polled children with it
	for _, rel := range polled {
		if ctx.Err() != nil {
			return
		}
		st := l.dirs[rel]
		if st == nil || st.watched {
			continue // dropped or replaced by an earlier change in this pass
		}
		snap, err := l.list(rel)
		if err != nil {
			if rel == "" {
				l.log.Warn("watcher: poll vault", "err", err)
				continue
			}
			l.change(ctx, rel) // gone: dropped and rescanned
			continue
		}
		old := st.snap
		st.snap = snap
		for name, s := range snap {
			if o, ok := old[name]; !ok || !o.same(s) {
				l.change(ctx, path.Join(rel, name))
			}
		}
		for name := range old {
			if _, ok := snap[name]; !ok {
				l.change(ctx, path.Join(rel, name))
			}
		}
	}
}

// list reads a directory's entries (not ignored ones) with their sizes and
// modification times.
func (l *loop) list(rel string) (map[string]snapshot, error) {
	entries, err := os.ReadDir(l.abs(rel))
	if err != nil {
		return nil, err
	}
	snap := make(map[string]snapshot, len(entries))
	for _, e := range entries {
		child := path.Join(rel, e.Name())
		if !ignore.IsFile(e.Name()) && l.rules.Ignored(child, e.IsDir()) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		snap[e.Name()] = snapshot{size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode().Type()}
	}
	return snap, nil
}
