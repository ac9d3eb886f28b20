// Package vaultfs opens, reads and writes files inside a vault under
// knotd's rules for shared ground. The vault is synced from other devices
// and edited by other programs, so every byte in it is someone else's
// input and every write into it races someone else's:
//
//   - every name is resolved inside the vault root with os.Root, so that
//     neither a symbolic link nor ".." leads out of the vault, whatever
//     is swapped in between a check and an open;
//   - a symbolic link at a file's own name is never followed, not even to
//     a file inside the vault (the file is opened, then the name is
//     checked to still be that very file);
//   - a FIFO, a device, a socket or a directory is refused at once,
//     without blocking (O_NONBLOCK);
//   - a file that has other hard links is never written (the write would
//     reach the other names too);
//   - every read is bounded;
//   - a replace is atomic and durable: a temporary file beside the target,
//     synced, renamed over it, then the directory synced.
//
// Names are slash-separated paths relative to the root.
package vaultfs

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/knotd/knotd/internal/durable"
)

var (
	// ErrNotRegular is wrapped by errors about a name that is a symbolic
	// link, a directory, a FIFO, a device or a socket: knotd never reads
	// or writes through such a name.
	ErrNotRegular = errors.New("not a regular file")
	// ErrHardLinked is wrapped by errors about a file that knotd would
	// write but that has other hard links.
	ErrHardLinked = errors.New("the file has other hard links")
	// ErrReplaced is wrapped when the file at a name was replaced while
	// it was being opened: try again later.
	ErrReplaced = errors.New("the file was replaced while it was being opened")
	// ErrTooLarge is wrapped by ReadFile's error for a file over its limit.
	ErrTooLarge = errors.New("the file is larger than the limit")
)

// Open opens the regular file name for reading. It refuses a symbolic
// link at name and anything that is not a regular file, and returns what
// fstat says of the opened file.
func Open(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	return open(root, name, os.O_RDONLY, 0, false)
}

// OpenWrite opens the regular file name with flag, which must include
// os.O_WRONLY or os.O_RDWR and may include os.O_APPEND, os.O_CREATE and
// os.O_TRUNC. Beyond what Open refuses, it refuses a file with other hard
// links (ErrHardLinked). A file it creates gets perm (through the umask);
// a symbolic link at name, dangling or not, is never created through.
func OpenWrite(root *os.Root, name string, flag int, perm fs.FileMode) (*os.File, fs.FileInfo, error) {
	if flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return nil, nil, fmt.Errorf("vaultfs: open %s for writing: no write flag", name)
	}
	// O_TRUNC would truncate at the open, before the checks: through a
	// link at the name, or a file with other hard links. It is done once
	// they passed.
	f, fi, err := open(root, name, flag&^os.O_TRUNC, perm, true)
	if err != nil || flag&os.O_TRUNC == 0 || fi.Size() == 0 {
		return f, fi, err
	}
	if err := f.Truncate(0); err != nil {
		_ = f.Close() // the truncate's error is the one to report
		return nil, nil, &fs.PathError{Op: "truncate", Path: name, Err: err}
	}
	if fi, err = f.Stat(); err != nil {
		_ = f.Close() // nothing was written
		return nil, nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return f, fi, nil
}

func open(root *os.Root, name string, flag int, perm fs.FileMode, write bool) (*os.File, fs.FileInfo, error) {
	fail := func(err error) (*os.File, fs.FileInfo, error) {
		return nil, nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	osName := filepath.FromSlash(name)
	var f *os.File
	var err error
	if flag&os.O_CREATE != 0 && flag&os.O_EXCL == 0 {
		// With O_EXCL os.Root never follows a symbolic link, dangling or
		// not; only a file that exists is opened the other way, and the
		// check below refuses it if it is a link.
		f, err = root.OpenFile(osName, flag|os.O_EXCL|openFlags, perm)
		if errors.Is(err, fs.ErrExist) {
			f, err = root.OpenFile(osName, flag&^os.O_CREATE|openFlags, 0)
		}
	} else {
		f, err = root.OpenFile(osName, flag|openFlags, perm)
	}
	if err != nil {
		// A symbolic link (dangling, or leading out of the vault) or a
		// FIFO without a reader fails the open itself: say what it is.
		if li, lerr := root.Lstat(osName); lerr == nil && !li.Mode().IsRegular() {
			return fail(fmt.Errorf("%w (%s)", ErrNotRegular, TypeName(li.Mode())))
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(root, osName, fi, write)
	}
	if err != nil {
		_ = f.Close() // nothing was written; the check's error is the one to report
		return fail(err)
	}
	return f, fi, nil
}

// check reports whether the opened file fi is a regular file that name
// still refers to, and, for a write, that it has no other hard links.
func check(root *os.Root, osName string, fi fs.FileInfo, write bool) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w (%s)", ErrNotRegular, TypeName(fi.Mode()))
	}
	li, err := root.Lstat(osName)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrReplaced, err)
	case li.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w (a symbolic link)", ErrNotRegular)
	case !os.SameFile(fi, li):
		return ErrReplaced
	}
	if write {
		if n := links(fi); n > 1 {
			return fmt.Errorf("%w (%d links)", ErrHardLinked, n)
		}
	}
	return nil
}

// TypeName names the type of a file mode that is not a regular file's,
// for messages: "a symbolic link", "a folder", "a FIFO"...
func TypeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// ReadFile reads the regular file name whole if it is at most limit bytes;
// a larger file is an error wrapping ErrTooLarge, found without reading
// more than limit+1 bytes.
func ReadFile(root *os.Root, name string, limit int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := Open(root, name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close() // read only: a close error loses nothing
	if fi.Size() > limit {
		return nil, fi, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fi, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, fi, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)}
	}
	return data, fi, nil
}

// ReplaceOptions configure Replace.
type ReplaceOptions struct {
	// Perm is the new file's permission bits; zero keeps those of the file
	// it replaces, or 0o644 (through the umask) when there is none.
	Perm fs.FileMode
	// Check, if set, is called after the new content is durable in its
	// temporary file and just before the rename: an error from it
	// replaces nothing and is returned (for example: the file changed
	// since the caller read it).
	Check func() error
	// NoSync skips both syncs, the file's and the directory's: the replace
	// is still atomic (a reader sees the old file or the new one), but a
	// crash may undo it or leave the old file. For files whose loss costs
	// nothing but rewriting them (a heartbeat written every minute).
	NoSync bool
	// DeferDirSync leaves the directory sync to the caller (SyncDir):
	// the new content is complete on disk when it is renamed, so a crash
	// leaves the old file or the new one, but the rename itself may be
	// undone by a crash until the directory is synced.
	DeferDirSync bool

	// hooks are ReplaceIfUnchanged's test hooks; nil outside the tests.
	hooks *exchangeHooks
}

// Replace replaces the file name with data, atomically: data goes to a
// new temporary file beside it (".<base>.knot-<random>.tmp", a name the
// watcher takes for an artefact), which is synced and renamed over name;
// then the directory is synced. A reader sees the old file or the new
// one, never a mix. A name that exists and is not a regular file (a
// symbolic link among them) is refused. The temporary file is removed on
// every failure.
//
// Because the file is replaced, not written through, a hard link to it
// keeps the old content.
func Replace(root *os.Root, name string, data []byte, opts ReplaceOptions) error {
	return ReplaceFrom(root, name, bytes.NewReader(data), opts)
}

// ReplaceFrom is Replace with the new content read from r to its end, for
// content too large to hold in memory (a file copied from elsewhere). An
// error reading r replaces nothing.
func ReplaceFrom(root *os.Root, name string, r io.Reader, opts ReplaceOptions) (err error) {
	fail := func(err error) error { return &fs.PathError{Op: "replace", Path: name, Err: err} }
	osName := filepath.FromSlash(name)
	perm, keep := opts.Perm, opts.Perm != 0
	switch li, err := root.Lstat(osName); {
	case err == nil && !li.Mode().IsRegular():
		return fail(fmt.Errorf("%w (%s)", ErrNotRegular, TypeName(li.Mode())))
	case err == nil && perm == 0:
		perm, keep = li.Mode().Perm(), true
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fail(err)
	}
	if perm == 0 {
		perm = 0o644
	}
	dir, base := path.Split(name)
	tmp, tmpName, err := createTemp(root, dir, base, perm)
	if err != nil {
		return fail(err)
	}
	closed := false
	defer func() {
		if err == nil {
			return
		}
		if !closed {
			_ = tmp.Close() // the write already failed; that error is the one to report
		}
		if rerr := root.Remove(tmpName); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, fail(fmt.Errorf("remove the temporary file: %w", rerr)))
		}
	}()
	if _, err := io.Copy(tmp, r); err != nil {
		return fail(err)
	}
	if keep {
		// Exactly the old permissions, whatever the umask took away.
		if err := tmp.Chmod(perm); err != nil {
			return fail(err)
		}
	}
	if !opts.NoSync {
		if err := tmp.Sync(); err != nil {
			return fail(fmt.Errorf("sync: %w", err))
		}
	}
	closed = true
	if err := tmp.Close(); err != nil {
		return fail(fmt.Errorf("close: %w", err))
	}
	if opts.Check != nil {
		if err := opts.Check(); err != nil {
			return err
		}
	}
	if err := root.Rename(tmpName, osName); err != nil {
		return fail(err)
	}
	if opts.DeferDirSync || opts.NoSync {
		return nil
	}
	if err := SyncDir(root, dir); err != nil {
		return fail(fmt.Errorf("sync the directory (the file is replaced): %w", err))
	}
	return nil
}

// TempInfix and TempSuffix frame the names of knotd's temporary files in
// a vault: ".<base>.knot-<random>.tmp".
const (
	TempInfix  = ".knot-"
	TempSuffix = ".tmp"
)

// createTemp creates a new temporary file for Replace in the directory
// dir (slash-separated, "" or ending in "/"), beside base. Its name is
// ".<base>.knot-<random>.tmp", or ".knot-<random>.tmp" when that would be
// longer than a file name may be (a note named with the file system's
// longest name still gets written).
func createTemp(root *os.Root, dir, base string, perm fs.FileMode) (*os.File, string, error) {
	var err error
	for range 10 {
		var r [8]byte
		_, _ = rand.Read(r[:]) // crypto/rand.Read never fails (Go 1.24+)
		file := "." + base + TempInfix + hex.EncodeToString(r[:]) + TempSuffix
		if len(file) > maxNameLen {
			file = TempInfix + hex.EncodeToString(r[:]) + TempSuffix
		}
		name := filepath.FromSlash(dir + file)
		var f *os.File
		f, err = root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, perm)
		if err == nil {
			return f, name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, "", err
		}
	}
	return nil, "", err
}

// maxNameLen is the longest file name (one path element) the common file
// systems take, in bytes.
const maxNameLen = 255

// SyncDir syncs the directory dir (slash-separated, "" for the root), so
// that a create, rename or remove in it is durable. File systems that
// cannot sync a directory are not an error.
func SyncDir(root *os.Root, dir string) error {
	dir = path.Clean("/" + dir)[1:]
	if dir == "" {
		dir = "."
	}
	return durable.SyncDirIn(root, filepath.FromSlash(dir))
}

// OpenDir opens the directory name for listing, refusing a symbolic link
// at name (ErrNotRegular) as Open does for files.
func OpenDir(root *os.Root, name string) (*os.File, error) {
	osName := filepath.FromSlash(name)
	d, err := root.Open(osName)
	if err != nil {
		if li, lerr := root.Lstat(osName); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("%w (a symbolic link)", ErrNotRegular)}
		}
		return nil, err
	}
	fi, err := d.Stat()
	if err == nil {
		var li fs.FileInfo
		li, err = root.Lstat(osName)
		switch {
		case err != nil:
			err = fmt.Errorf("%w: %w", ErrReplaced, err)
		case !fi.IsDir():
			err = errors.New("not a directory")
		case li.Mode()&fs.ModeSymlink != 0:
			err = fmt.Errorf("%w (a symbolic link)", ErrNotRegular)
		case !os.SameFile(fi, li):
			err = ErrReplaced
		}
	}
	if err != nil {
		_ = d.Close() // read only
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return d, nil
}
