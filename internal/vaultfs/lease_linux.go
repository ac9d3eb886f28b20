package vaultfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// leaseState is what trying to take a read lease on a file says.
type leaseState int

const (
	leaseTaken       leaseState = iota // nobody has the file open for writing
	leaseBusy                          // somebody has the file open for writing
	leaseUnsupported                   // no leases here (file system, owner, system)
)

// leasesHere says whether this system has file leases (a file system
// may still refuse them: takeLease says leaseUnsupported then).
const leasesHere = true

// takeLease takes a read lease on f, which must be open read-only: Linux
// grants it only while nobody has the file open for writing, and breaks it
// (reported by leaseBroken) as soon as somebody opens it for writing or
// truncates it, holding their open back until the lease is released.
// Leases are for the file's owner; another user's file, or a file system
// without them, is leaseUnsupported.
func takeLease(f *os.File) (leaseState, error) {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_RDLCK)
	switch {
	case err == nil:
		return leaseTaken, nil
	case errors.Is(err, unix.EAGAIN):
		return leaseBusy, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES),
		errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOLCK):
		return leaseUnsupported, nil
	}
	return leaseUnsupported, &os.PathError{Op: "lease", Path: f.Name(), Err: err}
}

// leaseBroken reports whether somebody began to open the file of the lease
// taken on f for writing (or to truncate it) since it was taken.
func leaseBroken(f *os.File) (bool, error) {
	t, err := unix.FcntlInt(f.Fd(), unix.F_GETLEASE, 0)
	if err != nil {
		return true, &os.PathError{Op: "lease", Path: f.Name(), Err: err}
	}
	return t != unix.F_RDLCK, nil
}

// releaseLease releases the lease taken on f, letting an open that broke
// it go on.
func releaseLease(f *os.File) error {
	// EAGAIN: the lease was broken and its break time ran out; it is gone.
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK); err != nil && !errors.Is(err, unix.EAGAIN) {
		return &os.PathError{Op: "release lease", Path: f.Name(), Err: err}
	}
	return nil
}
