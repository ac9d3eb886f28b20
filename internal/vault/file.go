package vault

import (
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/vaultfs"
)

// openStrand opens the strand at rel for reading, inside the vault root:
// never through a symbolic link out of the vault, never a symbolic link at
// the strand's own name, never blocking on a FIFO, and only a regular file
// (see package vaultfs).
func (v *Vault) openStrand(rel string) (*os.File, os.FileInfo, error) {
	if err := strand.ValidateRel(rel); err != nil {
		return nil, nil, err
	}
	if err := v.faults.opening(rel); err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return vaultfs.Open(v.fs, rel)
}

// readStrand reads the strand at rel if it is at most limit bytes. When
// it is larger, content is nil, tooBig is true and size and hash still
// describe the whole file (as large as it was when opened), so that the
// oversized version can be recorded as seen.
func (v *Vault) readStrand(rel string, limit int64) (content []byte, h state.Hash, info os.FileInfo, tooBig bool, err error) {
	for range 3 {
		f, fi, err := v.openStrand(rel)
		if err != nil {
			return nil, h, nil, false, err
		}
		content, h, tooBig, err = readOpen(f, fi, limit)
		_ = f.Close() // read only: a close error loses nothing
		if err != nil {
			return nil, h, nil, false, fmt.Errorf("read %s: %w", rel, err)
		}
		if content != nil || tooBig {
			return content, h, fi, tooBig, nil
		}
		// It grew past the limit after the stat: look again.
	}
	return nil, h, nil, false, fmt.Errorf("read %s: it keeps growing", rel)
}

// readOpen reads an open strand whose stat is fi: its content if it is at
// most limit bytes, else its hash (tooBig). Neither is set when the file
// grew past the limit after fi was taken.
func readOpen(f *os.File, fi os.FileInfo, limit int64) (content []byte, h state.Hash, tooBig bool, err error) {
	if fi.Size() > limit {
		sum := sha256.New()
		if _, err := io.Copy(sum, io.LimitReader(f, fi.Size())); err != nil {
			return nil, h, false, err
		}
		copy(h[:], sum.Sum(nil))
		return nil, h, true, nil
	}
	content, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, h, false, err
	}
	if int64(len(content)) > limit {
		return nil, h, false, nil
	}
	if content == nil {
		content = []byte{}
	}
	return content, state.HashOf(content), false, nil
}
