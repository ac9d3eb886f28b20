package transcript

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/knotd/knotd/internal/flock"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Active is how recently a transcript may have been modified and still be
// pruned: one modified less than Active ago is never deleted.
const Active = time.Minute

// Prune deletes old transcripts from dir and returns the paths it deleted.
// A transcript is old when it was last modified more than keepDays days
// before now, or when it is not among the keepCount newest (by
// modification time); keepDays or keepCount ≤ 0 sets no limit of that kind,
// and with neither Prune deletes nothing.
//
// Prune is careful:
//   - it considers only regular files named <uuid>.jsonl, and never follows
//     a symbolic link (it is not even counted);
//   - it never deletes a run still being written: a file modified less than
//     Active ago is kept, and so is a file whose lock a Recorder holds (in
//     this process or another); on Unix the file is deleted while Prune
//     holds that lock, so no Recorder can take it meanwhile;
//   - a file replaced between the listing and the deletion is kept.
//
// On a file system without advisory locks only the Active rule protects a
// run, so a run that printed nothing for over a minute while being the
// oldest beyond keepCount could be deleted. A failure to delete one file
// does not stop the others; the errors are joined.
func Prune(dir string, keepDays, keepCount int, now time.Time) ([]string, error) {
	if keepDays <= 0 && keepCount <= 0 {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: prune %s: %w", dir, err)
	}
	type file struct {
		path string
		info fs.FileInfo
	}
	var files []file
	var errs []error
	for _, e := range entries {
		if _, ok := runIDOf(e.Name()); !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("transcript: prune %s: %w", e.Name(), err))
			continue
		}
		files = append(files, file{filepath.Join(dir, e.Name()), info})
	}
	slices.SortFunc(files, func(a, b file) int {
		if c := b.info.ModTime().Compare(a.info.ModTime()); c != 0 {
			return c
		}
		return cmp.Compare(b.path, a.path)
	})
	maxAge := time.Duration(keepDays) * 24 * time.Hour
	var removed []string
	for i, f := range files {
		age := now.Sub(f.info.ModTime())
		old := keepDays > 0 && age > maxAge
		surplus := keepCount > 0 && i >= keepCount
		if !old && !surplus || age < Active {
			continue
		}
		ok, err := removeIdle(f.path, f.info)
		if err != nil {
			errs = append(errs, fmt.Errorf("transcript: prune %s: %w", f.path, err))
		}
		if ok {
			removed = append(removed, f.path)
		}
	}
	return removed, errors.Join(errs...)
}

// sameVersion reports whether a and b describe the same file with the same
// size and modification time: a file replaced or written to since it was
// listed is judged again at the next Prune. (The inode alone is not enough:
// file systems reuse the number of a deleted file at once.)
func sameVersion(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// removeIdle deletes the transcript at path unless a Recorder holds its lock
// or it is no longer the file described by info.
func removeIdle(path string, info fs.FileInfo) (removed bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	closed := false
	defer func() {
		if !closed {
			f.Close() // read only: nothing to lose
		}
	}()
	if fi, err := f.Stat(); err != nil || !sameVersion(fi, info) {
		return false, err
	}
	locked := true
	switch err := flock.TryLock(f); {
	case errors.Is(err, flock.ErrLocked):
		return false, nil // a Recorder is writing it
	case err != nil && flock.Unsupported(err):
		locked = false
	case err != nil:
		return false, err
	}
	if !removeWhileLocked {
		if locked {
			if err := flock.Unlock(f); err != nil {
				return false, err
			}
		}
		closed = true
		if err := f.Close(); err != nil {
			return false, err
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}
