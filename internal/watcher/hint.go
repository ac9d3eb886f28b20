package watcher

import "io/fs"

// Hint is what the watcher reports: "look at this path again". It does not
// say what happened; the consumer compares the disk with its own records
// (a reconcile) and decides. Hints may be spurious or repeated, never
// missing: every change under the vault is followed by a Hint that covers
// it, delivered after the path has been quiet for the quiet period (or
// after the maximum wait).
//
// There are three kinds:
//
//   - Hint{Path: "notes/a.md"}: the file at Path may have been created,
//     modified or deleted (or renamed to or from Path).
//   - Hint{Path: "notes", Dir: true}: something anywhere under the
//     directory Path may have changed: reconcile every file on disk below
//     it and every file recorded below it (the directory may be gone, or
//     its ignore rules changed).
//   - Hint{Dir: true} (Path ""), for which Full reports true: reconcile the
//     whole vault.
//     Sent once when watching starts, after events were lost (a kernel
//     queue overflow), and in polling mode.
type Hint struct {
	// Path is vault-relative with "/" separators; "" is the vault root.
	Path string
	// Dir reports that Path is a directory whose whole subtree must be
	// reconciled.
	Dir bool
	// Listing, when not nil, is what the watcher saw of the files of a
	// full rescan's vault while it set the watches; a reconcile may use it
	// instead of walking the vault again. It is nil on every other hint.
	Listing *Listing
}

// Listing is what a watcher's walk of the whole vault saw of the files the
// Filter keeps, in no particular order. The walk listed each directory after its
// watch was in place, so a change made after a file was looked at is
// followed by a Hint of its own, delivered after the Hint that carries
// the listing: a consumer that reconciles a path hinted later in the same
// batch must look at it again rather than trust the listing. A file that
// could not be looked at (it vanished meanwhile) is left out.
type Listing struct {
	Files []ListedFile
}

// ListedFile is one file of a Listing: its vault-relative slash path and
// what lstat said of it: on Linux its Sys() is what ignore.Rules.Walk
// says, elsewhere what os.Lstat returns.
type ListedFile struct {
	Path string
	Info fs.FileInfo
}

// fullRescan is the Hint that asks for a reconcile of the whole vault.
var fullRescan = Hint{Dir: true}

// Full reports whether the hint asks for a reconcile of the whole vault.
func (h Hint) Full() bool { return h.Dir && h.Path == "" }

// String returns the hint for logs: the path, "notes/ (subtree)", or
// "full rescan".
func (h Hint) String() string {
	switch {
	case h.Full():
		return "full rescan"
	case h.Dir:
		return h.Path + "/ (subtree)"
	}
	return h.Path
}
