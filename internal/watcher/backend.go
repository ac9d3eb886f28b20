package watcher

import (
	"github.com/fsnotify/fsnotify"
)

// backend is the part of fsnotify the loop uses. It is the seam where tests
// substitute a fake (for synctest, injected overflows and watch-limit
// errors); the real one is fsnotify.
type backend interface {
	// Add watches one directory (not recursively).
	Add(name string) error
	// Remove stops watching one directory.
	Remove(name string) error
	Events() <-chan fsnotify.Event
	Errors() <-chan error
	Close() error
}

// fsnotifyBackend adapts *fsnotify.Watcher, whose channels are fields.
type fsnotifyBackend struct{ w *fsnotify.Watcher }

func newFsnotifyBackend() (backend, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	return fsnotifyBackend{w}, nil
}

func (b fsnotifyBackend) Add(name string) error         { return b.w.Add(name) }
func (b fsnotifyBackend) Remove(name string) error      { return b.w.Remove(name) }
func (b fsnotifyBackend) Events() <-chan fsnotify.Event { return b.w.Events }
func (b fsnotifyBackend) Errors() <-chan error          { return b.w.Errors }
func (b fsnotifyBackend) Close() error                  { return b.w.Close() }

// pollOnly stands in for a kernel watcher that could not be created (the
// per-user inotify instance limit, or no descriptors left): every Add fails
// with the original error, so every directory is polled instead.
type pollOnly struct{ err error }

func (p pollOnly) Add(string) error              { return p.err }
func (p pollOnly) Remove(string) error           { return nil }
func (p pollOnly) Events() <-chan fsnotify.Event { return nil }
func (p pollOnly) Errors() <-chan error          { return nil }
func (p pollOnly) Close() error                  { return nil }
