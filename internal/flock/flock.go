// Package flock takes and releases exclusive advisory locks on open files
// without waiting: flock(2) on Unix, LockFileEx on Windows. knotd uses it
// for the one-knotd-per-vault lock and to mark a run transcript as being
// written.
//
// On Unix a lock belongs to the open file description, so two opens of one
// file conflict even within one process, and the kernel releases the lock
// when its holder exits, however it exits. On Windows the lock covers one
// byte far beyond any real content (Windows locks are mandatory, and
// readers of the file must not be stopped); it is released when the handle
// is closed or the process exits.
package flock

import "errors"

// ErrLocked is returned by TryLock when another open file holds the lock.
var ErrLocked = errors.New("flock: lock held elsewhere")
