package tieoff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/knotd/knotd/internal/vaultfs"
)

// repairWindow bounds how far back from the end Append looks for the last
// section's start.
const repairWindow = 64 << 10

// Append adds section s at the end of the tie-off name (a slash-separated
// path relative to root, the vault) and returns the offset at which the
// section's Event header was written.
//
// A missing file is created with notePerm (through the umask); a missing
// directory is an error, never created. Append refuses (and writes
// nothing to) a name that is a symbolic link, even a dangling one or one
// to a file inside the vault, or that is not a regular file (ErrNotRegular;
// a FIFO is refused without blocking). A file that has other hard links is
// never written through, since the write would reach the other names too:
// it is replaced by a copy with the new section (see appendByCopy), and
// the other names keep their content. The name is resolved inside root,
// so no symbolic link on the way leads out of the vault.
//
// The separator, and the section, go to the file in one write(2) on a file
// opened with O_APPEND, followed by fsync. To choose the separator Append
// reads at most the last section (and never more than 64 KiB): whether the
// file ends with a newline, and whether a hand edit left a code fence or
// HTML block open at its end (then the closing line is written before the
// separator, so the new section is not swallowed). The cost of an Append
// therefore does not grow with the history.
//
// Guarantees and limits. O_APPEND makes the write land at the end of the
// file even if someone else appended since Append looked; the separator
// was then chosen for the old end, and the returned offset is off by what
// they wrote. If the write fails, Append truncates the file back to its
// old size (when nobody else wrote meanwhile) and returns the error. A
// single write of a few KiB to a local file is complete or absent after a
// process crash, but neither POSIX nor the file systems promise that for a
// SIGKILL during a large write or for a power loss before fsync returns: a
// prefix of the section may remain. The run marker records the reply's
// length, so Parse marks such a last section Torn and HasRun reports
// ErrTorn instead of claiming the run was written. If fsync fails, the
// section may or may not be in the file: check with HasRun before writing
// it again.
//
// Append is safe to call concurrently for different files; callers must
// not append to one file from two goroutines at once.
func Append(root *os.Root, name string, s Section) (offset int64, err error) {
	sec, err := Format(s)
	if err != nil {
		return 0, fmt.Errorf("tieoff: append %s: %w", name, err)
	}
	f, fi, err := vaultfs.OpenWrite(root, name, os.O_RDWR|os.O_APPEND|os.O_CREATE, notePerm)
	if errors.Is(err, vaultfs.ErrHardLinked) {
		return appendByCopy(root, name, sec)
	}
	if err != nil {
		return 0, fmt.Errorf("tieoff: append %s: %w", name, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("tieoff: append %s: close: %w", name, cerr)
		}
	}()
	size := fi.Size()
	joint, err := joint(f, size)
	if err != nil {
		return 0, fmt.Errorf("tieoff: append %s: read end: %w", name, err)
	}
	buf := append(joint, sec...)
	if n, err := f.Write(buf); err != nil {
		if uerr := undo(f, size, n); uerr != nil {
			return 0, fmt.Errorf("tieoff: append %s: %w; undoing the partial write: %v", name, err, uerr)
		}
		return 0, fmt.Errorf("tieoff: append %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("tieoff: append %s: sync (the section may be in the file): %w", name, err)
	}
	return size + int64(len(joint)), nil
}

// appendByCopy adds the formatted section sec to the tie-off name, which
// has other hard links (a snapshot made with cp -al or rsnapshot, or a
// link someone planted): it is not written through the link, which would
// change the other names too; it is replaced by a copy holding its content
// and the new section (vaultfs.Replace: atomic, durable, the same
// permissions), and the other names keep the old content. This one append
// reads and writes the whole file (at most maxReadSize); the copy has one
// link, so the next append is an append again.
func appendByCopy(root *os.Root, name string, sec []byte) (int64, error) {
	old, _, err := vaultfs.ReadFile(root, name, maxReadSize)
	if err != nil {
		return 0, fmt.Errorf("tieoff: append %s (it has other hard links, so it is copied): %w", name, err)
	}
	j, err := joint(bytes.NewReader(old), int64(len(old)))
	if err != nil {
		return 0, fmt.Errorf("tieoff: append %s: read end: %w", name, err)
	}
	data := append(append(old, j...), sec...)
	if len(data) > maxReadSize {
		return 0, fmt.Errorf("tieoff: append %s (it has other hard links, so it is copied): %w", name, ErrTooLarge)
	}
	if err := vaultfs.Replace(root, name, data, vaultfs.ReplaceOptions{}); err != nil {
		return 0, fmt.Errorf("tieoff: append %s (it has other hard links, so it is copied): %w", name, err)
	}
	return int64(len(old) + len(j)), nil
}

// undo truncates a partial write of n bytes at the end of a file that had
// size bytes, unless someone else has written to it since.
func undo(f *os.File, size int64, n int) error {
	if n <= 0 {
		return nil
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != size+int64(n) {
		return fmt.Errorf("file is %d bytes, not %d: left as it is", fi.Size(), size+int64(n))
	}
	return f.Truncate(size)
}

// joint returns what must go between the end of a file of size bytes and
// a new section: nothing for an empty (or blank) file; otherwise a newline
// if the file lacks a final one, the lines that close a block a hand edit
// left open, and the separator.
func joint(f io.ReaderAt, size int64) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	tail, from, err := lastSection(f, size)
	if err != nil {
		return nil, err
	}
	if from == 0 && len(bytes.TrimSpace(tail)) == 0 {
		if tail[len(tail)-1] != '\n' {
			return []byte{'\n'}, nil
		}
		return nil, nil
	}
	return closeSection(tail, from >= 0), nil
}

// closeSection returns what goes between tail, the non-empty end of a
// tie-off, and a new section's Event header: a newline if tail does not
// end with one; if repair is set (tail starts at an Event header line),
// the lines that close a code fence or HTML block a hand edit left open in
// tail; and the separator.
func closeSection(tail []byte, repair bool) []byte {
	var j []byte
	if tail[len(tail)-1] != '\n' {
		j = append(j, '\n')
	}
	if repair {
		if c, ok := closers(append(slices.Clip(tail), j...)); ok {
			j = append(j, c...)
		}
	}
	return append(j, separator...)
}

// lastSection reads the end of a file of size > 0 bytes backwards until
// it finds the start of the last section, and returns the bytes from there
// (from is its offset). If the file holds no section header in its last
// repairWindow bytes, it returns those bytes and from = -1, or the whole
// file and from = 0 if it is shorter.
func lastSection(f io.ReaderAt, size int64) (tail []byte, from int64, err error) {
	r := &tailReader{f: f, size: size, off: size}
	for chunk := int64(4096); ; chunk *= 2 {
		if err := r.grow(min(chunk, repairWindow-r.len())); err != nil {
			return nil, 0, err
		}
		if last := r.lastStart(); last >= 0 {
			return r.buf[last-r.off:], last, nil
		}
		if r.off == 0 {
			return r.buf, 0, nil
		}
		if r.len() >= repairWindow {
			return r.buf, -1, nil
		}
	}
}

// Replace makes the tie-off name (relative to root) hold only section s
// (knot_mode: replace), with vaultfs.Replace: it writes a temporary file in
// the same directory (".<name>.knot-<random>.tmp"), fsyncs it, gives it
// the permissions of the file it replaces (notePerm through the umask for
// a new one) and renames it over name, then fsyncs the directory. Readers
// see the old file or the new one, never a mix; after a crash the old file
// is intact or the new one complete (a stray temporary file may remain).
// A name that is a symbolic link (even to a file inside the vault) or not
// a regular file is refused (ErrNotRegular); a missing directory is an
// error, never created.
//
// A tie-off with other hard links is replaced too, because the rename
// writes nothing through the link: name then holds the new section in a
// new file, and the other names keep the old content.
func Replace(root *os.Root, name string, s Section) error {
	sec, err := Format(s)
	if err != nil {
		return fmt.Errorf("tieoff: replace %s: %w", name, err)
	}
	// A zero Perm keeps the old permissions, and gives a new file 0o644,
	// which is notePerm, through the umask.
	if err := vaultfs.Replace(root, name, sec, vaultfs.ReplaceOptions{}); err != nil {
		return fmt.Errorf("tieoff: replace %s: %w", name, err)
	}
	return nil
}
