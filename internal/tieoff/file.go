package tieoff

import (
	"io/fs"

	"github.com/knotd/knotd/internal/vaultfs"
)

// notePerm is the permission, before the umask, of a tie-off that Append
// or Replace creates: what an editor gives a new note.
const notePerm fs.FileMode = 0o644

// maxReadSize is the largest tie-off, in bytes, that Read and MergeFile
// read whole (64 MiB); a larger one is refused with an error wrapping
// ErrTooLarge. Tail reads at most this many bytes from the end of a file.
// A tie-off grows by one reply per run, so even a busy strand takes years
// to come near it.
const maxReadSize = 64 << 20

// MaxSize is the largest tie-off knotd reads whole (maxReadSize), for
// knotd merge-tieoff, which reads git's versions of one.
const MaxSize = maxReadSize

// The errors below are those of internal/vaultfs, so that errors.Is works
// with either name.
var (
	// ErrNotRegular is wrapped by errors about a tie-off name that is a
	// symbolic link (even to a file inside the vault), a directory, a
	// FIFO or anything else but a regular file. knotd never writes
	// through such a name nor reads it into a prompt.
	ErrNotRegular = vaultfs.ErrNotRegular
	// ErrHardLinked is wrapped by Append's error for a tie-off that has
	// other hard links: appending would write to the other names too.
	ErrHardLinked = vaultfs.ErrHardLinked
	// ErrTooLarge is wrapped by the errors of Read and MergeFile for a
	// tie-off larger than maxReadSize.
	ErrTooLarge = vaultfs.ErrTooLarge
)
