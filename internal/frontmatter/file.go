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
var ErrChanged = vaultfs.ErrChanged

// WriteFile replaces the file name inside root (a vault), whose content
// was original when the caller read it, with updated, atomically, and
// never losing an edit the user saved meanwhile, whatever their editor's
// way of saving (see vaultfs.ReplaceIfUnchanged): updated goes to a
// temporary file in the same directory (a hidden ".<name>.knot-*.tmp"),
// gets the original file's permission bits, is synced to disk, and takes
// the file's place in one exchange; the directory is then synced. A
// symbolic link at name is refused, and nothing is resolved outside the
// root (see package vaultfs).
//
// If the file is missing, no longer equals original, or is open for
// writing (a save under way), WriteFile replaces nothing and returns an
// error wrapping ErrChanged: the caller should re-read, redo its edit and
// try again (or give up loudly). The temporary file is removed on every
// failure.
//
// The Guard it returns (also with some errors) watches the
// file that left the name for a save that was under way into it: the
// caller settles it (Guard.Settle) once such a save must be over, before
// it records the new content as the file's; a nil Guard settles to
// nothing. Because the file is replaced, not rewritten, a hard link to it
// keeps the old content (and files with other hard links are refused),
// and the new file belongs to knotd's user.
//
// When updated equals original there is nothing to write and WriteFile
// returns a nil Guard and nil without touching the file.
func WriteFile(root *os.Root, name string, original, updated []byte) (*vaultfs.Guard, error) {
	return write(root, name, original, updated, false)
}

// WriteFileDeferred is WriteFile without its last step, the sync of the
// directory. The new content is durable in its temporary file when it
// takes name's place, so a crash leaves the old content or the new one,
// never a damaged file; but the exchange itself may be undone by a crash
// until the directory is synced (vaultfs.SyncDir). It is for a caller
// that must not wait for that sync now, and that syncs the directory
// before it records anything that depends on the new content being the
// one on disk.
func WriteFileDeferred(root *os.Root, name string, original, updated []byte) (*vaultfs.Guard, error) {
	return write(root, name, original, updated, true)
}

func write(root *os.Root, name string, original, updated []byte, deferSync bool) (*vaultfs.Guard, error) {
	if bytes.Equal(original, updated) {
		return nil, nil
	}
	g, err := vaultfs.ReplaceIfUnchanged(root, name, original, updated, vaultfs.ReplaceOptions{DeferDirSync: deferSync})
	if errors.Is(err, fs.ErrNotExist) && !errors.Is(err, ErrChanged) {
		err = fmt.Errorf("%w: %w", ErrChanged, err)
	}
	if err != nil {
		return g, fmt.Errorf("frontmatter: write %s: %w", name, err)
	}
	return g, nil
}
