package tieoff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"

	"github.com/knotd/knotd/internal/vaultfs"
)

// ErrTorn is wrapped by HasRun's error when the run's section is in the
// file but shorter than written (see Section.Torn).
var ErrTorn = errors.New("tieoff: section shorter than written")

// Window is the newest part of a tie-off, as Tail read it.
type Window struct {
	// Sections are the newest whole sections, oldest first. Their Offset
	// is in the file; their Line counts from the first line of Text.
	Sections []Section
	// Problems are what Parse reported about Text; lines count from the
	// first line of Text.
	Problems []ParseError
	// Text is the file's bytes from the first returned section to the end,
	// separators included: what an Event Context shows.
	Text []byte
	// Start is the file offset of Text. Start > 0 means that older content
	// was left out (Start == Size with no Sections: even the newest
	// section did not fit in the budget).
	Start int64
	// Size is the size of the file when it was read.
	Size int64
	// BytesRead is how many bytes Tail read from the file.
	BytesRead int64
}

// Tail returns the newest whole sections of the tie-off name (relative to
// root): at most n of them (n <= 0: no limit) whose bytes, from the first
// one to the end of the file, are at most maxBytes (maxBytes <= 0, or more
// than maxReadSize: maxReadSize). It reads the file backwards from its end
// in growing chunks and stops as soon as it has n section headers or has
// read maxBytes+1 bytes, so the bytes it reads are bounded by the budget,
// not by the history.
//
// Sections are found by their Event header lines. Replies cannot contain
// such lines (Format neutralises them), so in a file knotd wrote the split
// is the one Parse makes; in a file where a user left a code fence open
// around a copied header, the two can differ. A missing file is an error
// wrapping fs.ErrNotExist; a symbolic link (even to a file inside the
// vault) or a file that is not regular is refused (ErrNotRegular), a FIFO
// without blocking.
func Tail(root *os.Root, name string, n, maxBytes int) (Window, error) {
	f, fi, err := vaultfs.Open(root, name)
	if err != nil {
		return Window{}, fmt.Errorf("tieoff: tail %s: %w", name, err)
	}
	defer f.Close() // read only: a close error loses nothing
	size := fi.Size()
	budget := int64(maxBytes)
	if budget <= 0 || budget > maxReadSize {
		budget = maxReadSize
	}
	r := &tailReader{f: f, size: size, off: size}
	var starts []int64
	for chunk := int64(4096); ; chunk = min(2*chunk, 1<<20) {
		starts = r.starts()
		if r.off == 0 || n > 0 && len(starts) >= n || budget > 0 && r.len() > budget {
			break
		}
		want := chunk
		if budget > 0 {
			// One byte beyond the budget tells whether a line starts
			// exactly at the budget's edge.
			want = min(want, budget+1-r.len())
		}
		if err := r.grow(want); err != nil {
			return Window{}, fmt.Errorf("tieoff: tail %s: %w", name, err)
		}
	}
	i := len(starts)
	for i > 0 && (n <= 0 || len(starts)-i < n) && (budget <= 0 || size-starts[i-1] <= budget) {
		i--
	}
	w := Window{Start: size, Size: size, BytesRead: r.read}
	if i == len(starts) {
		return w, nil
	}
	w.Start = starts[i]
	w.Text = r.buf[w.Start-r.off:]
	w.Sections, w.Problems = Parse(w.Text)
	for j := range w.Sections {
		w.Sections[j].Offset += w.Start
	}
	return w, nil
}

// HasRun reports whether the tie-off name (relative to root) holds the
// whole section of run runID, for crash recovery: was the run's reply
// appended before the crash? It scans backwards from the end of the file,
// line by line, in chunks growing from 4 KiB to 64 KiB (its memory is
// bounded by that), and stops at the run's marker, so the usual case (the
// run's section is the newest) reads one small chunk. It does not look
// before offset from: pass the file's size recorded before the run started, so
// that an absent run costs only what was written since, or 0 to search the
// whole file (which reads all of it when the run is absent). If the file
// is now shorter than from, the whole file is searched.
//
// A missing file holds no run: false and no error. If the run's section is
// the last one and shorter than written, HasRun returns false and an error
// wrapping ErrTorn: the caller decides whether to append the run again. A
// name that is a symbolic link or not a regular file is an error wrapping
// ErrNotRegular (a FIFO is refused without blocking).
func HasRun(root *os.Root, name, runID string, from int64) (bool, error) {
	if err := validRunID(runID, false); err != nil {
		return false, fmt.Errorf("tieoff: has run %s: %w", name, err)
	}
	f, fi, err := vaultfs.Open(root, name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("tieoff: has run %s: %w", name, err)
	}
	defer f.Close() // read only: a close error loses nothing
	size := fi.Size()
	if from < 0 || from > size {
		from = 0
	}
	torn := false
	found, err := scanLinesBack(f, size, max(from-1, 0), func(off int64, line []byte, later bool) bool {
		if !isMarkerLine(line) {
			return false
		}
		m, err := parseMarker(trimCR(line))
		if err != nil || m.id != runID {
			return false
		}
		n := m.size
		// A section of our own: the marker line, "---", a blank line, then
		// n bytes of reply. Only the last section can have been cut short.
		bodyStart := off + int64(len(line)) + 1 + int64(len(headerBreak))
		torn = !later && n >= 0 && size-bodyStart < int64(n)
		return true
	})
	switch {
	case err != nil:
		return false, fmt.Errorf("tieoff: has run %s: %w", name, err)
	case torn:
		return false, fmt.Errorf("tieoff: has run %s: run %s: %w", name, runID, ErrTorn)
	}
	return found, nil
}

// maxLine is the longest line scanLinesBack hands to its callback; longer
// lines are skipped (no header or marker line is that long).
const maxLine = 64 << 10

// scanLinesBack calls fn for every line of the file, without its '\n',
// from the last to the first line starting after lo (or at 0), until fn
// returns true. later says whether a section header line was seen after
// the line. Memory is bounded by the largest chunk (64 KiB) and maxLine.
func scanLinesBack(f io.ReaderAt, size, lo int64, fn func(off int64, line []byte, later bool) bool) (bool, error) {
	var (
		carry []byte // start of a line that began before pos, '\n' included
		long  bool   // carry was dropped: its line is longer than maxLine
		later bool
		buf   []byte
	)
	visit := func(off int64, line []byte) bool {
		if fn(off, line, later) {
			return true
		}
		later = later || isSectionStart(trimCR(line))
		return false
	}
	// Chunks grow from 4 KiB to 64 KiB: the usual search ends in the first.
	for pos, chunk := size, int64(4096); pos > lo; chunk = min(2*chunk, 64<<10) {
		n := min(chunk, pos-lo)
		buf = slices.Grow(buf[:0], int(n)+len(carry))[:n]
		if _, err := f.ReadAt(buf, pos-n); err != nil {
			return false, err
		}
		pos -= n
		data := append(buf, carry...)
		// After a dropped carry, the last segment of data is the rest of
		// that long line, unless data ends exactly where the line began.
		skipLast := long && !bytes.HasSuffix(data, []byte("\n"))
		first := bytes.IndexByte(data, '\n')
		if first < 0 {
			first = len(data)
		}
		// Whole lines after the first '\n', last to first.
		for end := len(data); end > first+1; {
			start := bytes.LastIndexByte(data[first+1:end-1], '\n') + first + 2
			line := bytes.TrimSuffix(data[start:end], []byte("\n"))
			if !(skipLast && end == len(data)) && visit(pos+int64(start), line) {
				return true, nil
			}
			end = start
		}
		// The first segment is the start of a line that began before pos
		// (or at 0): keep it for the next round.
		long = skipLast && first == len(data)
		if first < len(data) {
			first++ // keep the '\n'
		}
		carry = append(carry[:0:0], data[:first]...)
		if len(carry) > maxLine {
			carry, long = carry[:0], true
		}
		if pos == 0 && len(carry) > 0 && !long {
			return visit(0, bytes.TrimSuffix(carry, []byte("\n"))), nil
		}
		buf = data[:0]
	}
	return false, nil
}

func trimCR(b []byte) []byte { return bytes.TrimSuffix(b, []byte("\r")) }

// tailReader reads a file backwards from its end into one buffer.
type tailReader struct {
	f    io.ReaderAt
	size int64
	off  int64  // file offset of buf[0]
	buf  []byte // the bytes read: the end of store
	// store grows by doubling (up to the file's size), so that reading n
	// bytes in chunks copies O(n) bytes, not O(n²/chunk).
	store []byte
	read  int64
}

func (r *tailReader) len() int64 { return r.size - r.off }

// grow reads up to n more bytes before the buffer.
func (r *tailReader) grow(n int64) error {
	n = min(n, r.off)
	if n <= 0 {
		return nil
	}
	need := int(n) + len(r.buf)
	if need > len(r.store) {
		ns := make([]byte, max(need, int(min(2*int64(len(r.store)), r.size))))
		copy(ns[len(ns)-len(r.buf):], r.buf)
		r.store = ns
	}
	start := len(r.store) - need
	if _, err := r.f.ReadAt(r.store[start:start+int(n)], r.off-n); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("file shrank while being read: %w", io.ErrUnexpectedEOF)
		}
		return err
	}
	r.buf, r.off, r.read = r.store[start:], r.off-n, r.read+n
	return nil
}

// starts returns the file offsets of the Event header lines among the
// whole lines of the buffer, in order.
func (r *tailReader) starts() []int64 {
	var out []int64
	for i := 0; i < len(r.buf); {
		e := bytes.IndexByte(r.buf[i:], '\n')
		if e < 0 {
			e = len(r.buf)
		} else {
			e += i
		}
		if r.isStart(i, e) {
			out = append(out, r.off+int64(i))
		}
		i = e + 1
	}
	return out
}

// lastStart returns the file offset of the last Event header line among
// the whole lines of the buffer, or -1. It reads the buffer backwards.
func (r *tailReader) lastStart() int64 {
	for e := len(r.buf); ; {
		s := bytes.LastIndexByte(r.buf[:e], '\n') + 1
		if r.isStart(s, e) {
			return r.off + int64(s)
		}
		if s == 0 {
			return -1
		}
		e = s - 1
	}
}

// isStart reports whether buf[s:e] is a whole line and an Event header.
func (r *tailReader) isStart(s, e int) bool {
	if s == 0 && r.off != 0 {
		return false // the line may begin before the buffer
	}
	line := trimCR(r.buf[s:e])
	if s == 0 {
		line = bytes.TrimPrefix(line, []byte(bom))
	}
	return isSectionStart(line)
}
