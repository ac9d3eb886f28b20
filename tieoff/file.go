package tieoff

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// NotePerm is the permission, before the umask, of a tie-off that Append
// or Replace creates: what an editor gives a new note.
const NotePerm fs.FileMode = 0o644

// ErrNotRegular is wrapped by errors about a tie-off path that is a
// symbolic link, a directory, a FIFO or anything else but a regular file.
// knotd never writes through such a path nor reads it into a prompt.
var ErrNotRegular = errors.New("tieoff: not a regular file")

// openFile opens a tie-off without following a symbolic link at its name
// and makes sure it is a regular file.
func openFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if err := checkNotLink(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|openFlags, perm)
	if err != nil {
		if isLinkErr(err) {
			return nil, fmt.Errorf("%w: %s is a symbolic link", ErrNotRegular, path)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w: %s is %v", ErrNotRegular, path, fi.Mode().Type())
	}
	if err != nil {
		f.Close() // the error above is what matters; nothing was written
		return nil, err
	}
	return f, nil
}

func openRead(path string) (*os.File, error) { return openFile(path, os.O_RDONLY, 0) }

// createTemp creates a new file for Replace beside the tie-off, named so
// that the watcher takes it for an artefact (".<base>.knot-<random>.tmp").
// perm goes through the umask like any new file's.
func createTemp(dir, base string, perm fs.FileMode) (*os.File, error) {
	var err error
	for range 10 {
		var r [8]byte
		_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go 1.24+)
		name := filepath.Join(dir, "."+base+".knot-"+hex.EncodeToString(r[:])+".tmp")
		var f *os.File
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, perm)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, err
}
