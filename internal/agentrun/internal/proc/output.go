package proc

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// capWriter keeps the first max bytes written to it and counts them all.
// When lines is set, every complete line (without its newline) is also
// handed to it as it arrives, so a streaming parser sees the whole output
// even past max; when live is set, the bytes kept are handed to it as they
// arrive. It is written by one goroutine (exec's copier) and read after
// Wait, which waits for that goroutine.
type capWriter struct {
	max   int
	buf   []byte
	n     int64
	lines *lineSplitter
	live  Live
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if room := w.max - len(w.buf); room > 0 {
		kept := p[:min(room, len(p))]
		w.buf = append(w.buf, kept...)
		if w.live != nil {
			w.live.Add(kept)
		}
	}
	if w.lines != nil {
		w.lines.write(p)
	}
	return len(p), nil
}

func (w *capWriter) truncated() bool { return w.n > int64(len(w.buf)) }

// lineSplitter cuts a byte stream into lines of at most max bytes and hands
// each to fn. A longer line is skipped whole and counted in dropped.
type lineSplitter struct {
	max     int
	fn      func(line []byte)
	cur     []byte
	skip    bool // inside a line that grew past max
	dropped int
}

func (s *lineSplitter) write(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !s.skip {
			if len(s.cur)+len(chunk) > s.max {
				s.skip, s.cur = true, s.cur[:0]
				s.dropped++
			} else {
				s.cur = append(s.cur, chunk...)
			}
		}
		if i < 0 {
			return
		}
		s.endLine()
		p = p[i+1:]
	}
}

func (s *lineSplitter) endLine() {
	if !s.skip {
		s.fn(bytes.TrimSuffix(s.cur, []byte("\r")))
	}
	s.skip, s.cur = false, s.cur[:0]
}

// EachLine hands fn each line of b, without its newline (or a carriage
// return before it), as Run hands standard output to Spec.OnLine: a line
// longer than max bytes is skipped. It returns how many were skipped.
func EachLine(b []byte, max int, fn func(line []byte)) (skipped int) {
	s := &lineSplitter{max: max, fn: fn}
	s.write(b)
	s.flush()
	return s.dropped
}

// flush hands over a last line that had no newline.
func (s *lineSplitter) flush() {
	if len(s.cur) > 0 || s.skip {
		s.endLine()
	}
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	max     int
	buf     []byte
	dropped bool
}

func (w *tailWriter) Write(p []byte) (int, error) {
	if len(p) >= w.max {
		w.dropped = w.dropped || len(w.buf) > 0 || len(p) > w.max
		w.buf = append(w.buf[:0], p[len(p)-w.max:]...)
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) > 2*w.max {
		n := copy(w.buf, w.buf[len(w.buf)-w.max:])
		w.buf = w.buf[:n]
		w.dropped = true
	}
	return len(p), nil
}

// String returns the kept tail, starting at a rune boundary, with invalid
// UTF-8 replaced.
func (w *tailWriter) String() string {
	b := w.buf
	if len(b) > w.max {
		b = b[len(b)-w.max:]
	}
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

func (w *tailWriter) truncated() bool { return w.dropped || len(w.buf) > w.max }
