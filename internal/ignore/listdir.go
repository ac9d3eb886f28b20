package ignore

import (
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// readDir lists the directory abs in lexical order, as os.ReadDir does.
// Unless follow is set, a symbolic link at abs is not followed (where the
// platform allows): a folder swapped for a link after its parent was
// listed is not listed through the link.
// The entries' Info looks at a file relative to the open directory (one
// fstatat on Linux) instead of resolving its whole path again, and
// returns a FileInfo smaller than os's (see statAt for why that matters).
// Directory entries keep os's own Info, whose result os.SameFile
// understands.
//
// The directory stays open until done is called; Info must not be called
// after that.
func readDir(abs string, follow bool) (entries []fs.DirEntry, done func() error, err error) {
	f, err := openDir(abs, follow)
	if err != nil {
		return nil, func() error { return nil }, err
	}
	done = func() error {
		if err := f.Close(); err != nil {
			return fmt.Errorf("ignore: close directory %s: %w", abs, err)
		}
		return nil
	}
	entries, err = f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	at := statAt(f)
	if at == nil {
		return entries, done, err
	}
	for i, e := range entries {
		if !e.IsDir() {
			entries[i] = dirEntryAt{DirEntry: e, at: at}
		}
	}
	return entries, done, err
}

// dirEntryAt is a directory entry whose Info asks at, the open directory's
// relative lstat.
type dirEntryAt struct {
	fs.DirEntry
	at func(name string) (fs.FileInfo, error)
}

func (e dirEntryAt) Info() (fs.FileInfo, error) { return e.at(e.Name()) }

// fileID identifies a file on its device: the inode and device numbers,
// with the file's status change time (ctime, nanoseconds).
type fileID struct {
	Inode, Device uint64
	Ctime         int64
}

// Ident returns the inode and device numbers, for packages that identify
// files without knowing this one (such as the state store's stamps).
func (id fileID) Ident() (inode, device uint64) { return id.Inode, id.Device }

// ChangeTime returns the file's status change time in nanoseconds.
func (id fileID) ChangeTime() int64 { return id.Ctime }
