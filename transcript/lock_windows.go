//go:build windows

package transcript

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// openFlags adds nothing on Windows, which has no O_NOFOLLOW; Prune checks
// that the file it opened is the one it listed.
const openFlags = 0

// removeWhileLocked: Windows cannot remove a file this process has open, so
// Prune releases the lock and closes the file just before removing it.
const removeWhileLocked = false

// errLocked is lockFile's error when another handle holds the lock.
var errLocked = errors.New("locked")

// lockRange is the byte range locked: one byte far beyond any transcript's
// end, since Windows locks are mandatory and must not stop readers.
var lockRange = windows.Overlapped{Offset: 0, OffsetHigh: 0x7fffffff}

// lockFile takes an exclusive lock on f without waiting. The system releases
// it when the handle is closed or the process exits.
func lockFile(f *os.File) error {
	ol := lockRange
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return errLocked
	default:
		return &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: err}
	}
}

// unlockFile releases the lock on f.
func unlockFile(f *os.File) error {
	ol := lockRange
	if err := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol); err != nil {
		return &os.PathError{Op: "UnlockFileEx", Path: f.Name(), Err: err}
	}
	return nil
}

// lockUnsupported reports whether err says the file system has no locks.
func lockUnsupported(err error) bool {
	return errors.Is(err, windows.ERROR_NOT_SUPPORTED) || errors.Is(err, windows.ERROR_INVALID_FUNCTION)
}

// syncDir does nothing: Windows cannot open a directory for syncing, and
// NTFS journals its directory entries.
func syncDir(string) error { return nil }
