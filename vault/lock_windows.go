//go:build windows

package vault

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockRange is the byte range LockFileEx locks: one byte far beyond the
// holder's record. Windows locks are mandatory, so locking the record
// itself would stop a second knotd from reading who holds the vault.
var lockRange = windows.Overlapped{Offset: 0, OffsetHigh: 0x7fffffff}

// lockFile takes an exclusive lock on f without waiting. The system
// releases it when the handle is closed or the process exits.
func lockFile(f *os.File) error {
	ol := lockRange
	err := windows.LockFileEx(windows.Handle(f.Fd()),
		windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return errWouldBlock
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
