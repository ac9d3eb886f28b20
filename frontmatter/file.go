package frontmatter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/knotd/knotd/internal/durable"
)

// ErrChanged is wrapped by WriteFile's error when the file on disk is no
// longer the content the edit was made from.
var ErrChanged = errors.New("file changed on disk since it was read")

// WriteFile replaces the file at path, whose content was original when the
// caller read it, with updated, atomically: updated goes to a temporary
// file in the same directory (a hidden ".<name>.knot-*.tmp"), gets the
// original file's permission bits, is synced to disk, and is renamed over
// path; the directory is then synced (on Unix).
//
// Just before the rename WriteFile reads path again, and if it is missing or
// no longer equals original it replaces nothing and returns an error
// wrapping ErrChanged: the user saved an edit in between, and the caller
// should re-read, redo its edit and try again (or give up loudly). The
// temporary file is removed on every failure.
//
// A small window remains between that last comparison and the rename: a
// save that lands inside it (microseconds wide) is replaced. Closing it
// would need a lock the user's editor honours, which plain files do not
// have. Because the file is replaced, not rewritten, a hard link to it
// keeps the old content, and the new file belongs to knotd's user.
//
// When updated equals original there is nothing to write and WriteFile
// returns nil without touching the file.
func WriteFile(path string, original, updated []byte) error {
	if bytes.Equal(original, updated) {
		return nil
	}
	if err := WriteFileDeferred(path, original, updated); err != nil {
		return err
	}
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("frontmatter: write %s: %w", path, err)
	}
	return nil
}

// WriteFileDeferred is WriteFile without its last step, the sync of the
// directory. The new content is durable in its temporary file when it is
// renamed over path, so a crash leaves the old content or the new one,
// never a damaged file; but the rename itself may be undone by a crash
// until the directory is synced (durable.SyncDir). It is for a caller
// that must not wait for that sync now, and that syncs the directory
// before it records anything that depends on the new content being the
// one on disk.
func WriteFileDeferred(path string, original, updated []byte) (err error) {
	if bytes.Equal(original, updated) {
		return nil
	}
	fail := func(err error) error { return fmt.Errorf("frontmatter: write %s: %w", path, err) }
	info, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(fmt.Errorf("%w: %w", ErrChanged, err))
	case err != nil:
		return fail(err)
	case !info.Mode().IsRegular():
		return fail(errors.New("not a regular file"))
	case info.Size() != int64(len(original)):
		return fail(ErrChanged)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".knot-*.tmp")
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
		if rmErr := os.Remove(tmp.Name()); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			err = errors.Join(err, fail(rmErr))
		}
	}()
	if _, err := tmp.Write(updated); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	closed = true
	if err := tmp.Close(); err != nil {
		return fail(err)
	}
	current, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fail(fmt.Errorf("%w: %w", ErrChanged, err))
	}
	if err != nil {
		return fail(err)
	}
	if !bytes.Equal(current, original) {
		return fail(ErrChanged)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return nil
}
