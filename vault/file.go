package vault

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
)

// frontmatterScanLimit bounds how much of a strand is read to find its
// frontmatter when only the frontmatter is needed (rename detection).
const frontmatterScanLimit = 64 << 10

// openStrand opens a strand file for reading without following a symbolic
// link and without blocking on a FIFO, and checks that what it opened is a
// regular file.
func openStrand(abs string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close() // read only: nothing to lose
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		_ = f.Close() // read only: nothing to lose
		return nil, nil, fmt.Errorf("%s: not a regular file", abs)
	}
	return f, info, nil
}

// hashFile returns the SHA-256 and size of the regular file at abs,
// reading it in a stream so that a huge file costs no memory.
func hashFile(abs string) (h Hash, size int64, err error) {
	f, _, err := openStrand(abs)
	if err != nil {
		return h, 0, err
	}
	defer f.Close() // read only: a close error loses nothing
	sum := sha256.New()
	size, err = io.Copy(sum, f)
	if err != nil {
		return h, 0, fmt.Errorf("read %s: %w", abs, err)
	}
	copy(h[:], sum.Sum(nil))
	return h, size, nil
}

// readHead returns at most limit bytes from the start of the regular file
// at abs.
func readHead(abs string, limit int64) ([]byte, error) {
	f, _, err := openStrand(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close() // read only: a close error loses nothing
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", abs, err)
	}
	return b, nil
}

// readStrand reads the regular file at abs if it is at most limit bytes.
// When it is larger, content is nil, tooBig is true and size and hash
// still describe the whole file, so that the oversized version can be
// recorded as seen.
func readStrand(abs string, limit int64) (content []byte, h Hash, info os.FileInfo, tooBig bool, err error) {
	f, info, err := openStrand(abs)
	if err != nil {
		return nil, h, nil, false, err
	}
	defer f.Close() // read only: a close error loses nothing
	if info.Size() > limit {
		sum := sha256.New()
		if _, err := io.Copy(sum, f); err != nil {
			return nil, h, nil, false, fmt.Errorf("read %s: %w", abs, err)
		}
		copy(h[:], sum.Sum(nil))
		return nil, h, info, true, nil
	}
	content, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, h, nil, false, fmt.Errorf("read %s: %w", abs, err)
	}
	if int64(len(content)) > limit { // it grew since the stat
		return readStrand(abs, limit)
	}
	return content, HashOf(content), info, false, nil
}
