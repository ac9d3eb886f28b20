//go:build windows

package flock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockRange is the byte range locked: one byte far beyond any real content.
var lockRange = windows.Overlapped{Offset: 0, OffsetHigh: 0x7fffffff}

// TryLock takes an exclusive lock on f, or fails at once with ErrLocked.
func TryLock(f *os.File) error {
	ol := lockRange
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return ErrLocked
	default:
		return &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
	}
}

// Unlock releases the lock on f.
func Unlock(f *os.File) error {
	ol := lockRange
	if err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol); err != nil {
		return &os.PathError{Op: "UnlockFileEx", Path: f.Name(), Err: err}
	}
	return nil
}

// Unsupported reports whether err says the file system has no locks.
func Unsupported(err error) bool {
	return errors.Is(err, windows.ERROR_NOT_SUPPORTED) || errors.Is(err, windows.ERROR_INVALID_FUNCTION)
}
