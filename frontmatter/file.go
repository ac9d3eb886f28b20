package frontmatter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/knotd/knotd/internal/vaultfs"
)

// ErrChanged is wrapped by WriteFile's error when the file on disk is no
// longer the content the edit was made from.
var ErrChanged = errors.New("file changed on disk since it was read")

// WriteFile replaces the file name inside root (a vault), whose content
// was original when the caller read it, with updated, atomically: updated
// goes to a temporary file in the same directory (a hidden
// ".<name>.knot-*.tmp"), gets the original file's permission bits, is
// synced to disk, and is renamed over name; the directory is then synced.
// A symbolic link at name is refused, and nothing is resolved outside the
// root (see package vaultfs).
//
// Just before the rename WriteFile reads name again, and if it is missing
// or no longer equals original it replaces nothing and returns an error
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
func WriteFile(root *os.Root, name string, original, updated []byte) error {
	return write(root, name, original, updated, false)
}

// WriteFileDeferred is WriteFile without its last step, the sync of the
// directory. The new content is durable in its temporary file when it is
// renamed over name, so a crash leaves the old content or the new one,
// never a damaged file; but the rename itself may be undone by a crash
// until the directory is synced (vaultfs.SyncDir). It is for a caller
// that must not wait for that sync now, and that syncs the directory
// before it records anything that depends on the new content being the
// one on disk.
func WriteFileDeferred(root *os.Root, name string, original, updated []byte) error {
	return write(root, name, original, updated, true)
}

func write(root *os.Root, name string, original, updated []byte, deferSync bool) error {
	if bytes.Equal(original, updated) {
		return nil
	}
	fail := func(err error) error { return fmt.Errorf("frontmatter: write %s: %w", name, err) }
	unchanged := func() error {
		current, _, err := vaultfs.ReadFile(root, name, int64(len(original)))
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, vaultfs.ErrTooLarge):
			return fail(fmt.Errorf("%w: %w", ErrChanged, err))
		case err != nil:
			return fail(err)
		case !bytes.Equal(current, original):
			return fail(ErrChanged)
		}
		return nil
	}
	// A cheap first look: nothing is written for a file that already
	// changed.
	if err := unchanged(); err != nil {
		return err
	}
	if err := vaultfs.Replace(root, name, updated, vaultfs.ReplaceOptions{Check: unchanged, DeferDirSync: deferSync}); err != nil {
		if errors.Is(err, ErrChanged) {
			return err
		}
		return fail(err)
	}
	return nil
}
