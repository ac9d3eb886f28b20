package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// tailChunk is how much a backward scan reads at a time.
const tailChunk = 32 << 10

// lastNewline returns the offset just after the last '\n' in the first end
// bytes of r, or 0 when there is none.
func lastNewline(r io.ReaderAt, end int64) (int64, error) {
	buf := make([]byte, tailChunk)
	for end > 0 {
		start := max(0, end-tailChunk)
		b := buf[:end-start]
		if _, err := r.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// envelopeHead is the envelope of a line without its payload.
type envelopeHead struct {
	Seq   int64
	RunID string
	Type  Type
}

// peekEnvelope reads the envelope of the line starting at off from its
// first bytes, without reading the payload: a Recorder writes seq, run_id
// and type before data. A line whose envelope is not in its first bytes is
// decoded whole up to the next newline.
func peekEnvelope(r io.ReaderAt, off int64) (envelopeHead, error) {
	var h envelopeHead
	buf := make([]byte, 1024)
	n, err := r.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return h, err
	}
	buf = buf[:n]
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		buf = buf[:i]
	}
	dec := json.NewDecoder(bytes.NewReader(buf))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return h, errors.New("not a transcript event")
	}
	for dec.More() && (h.Seq == 0 || h.RunID == "" || h.Type == "") {
		key, err := dec.Token()
		if err != nil {
			break
		}
		var dst any
		switch key {
		case "seq":
			dst = &h.Seq
		case "run_id":
			dst = &h.RunID
		case "type":
			dst = &h.Type
		default:
			return readEnvelope(r, off)
		}
		if err := dec.Decode(dst); err != nil {
			break
		}
	}
	if h.Seq > 0 && h.RunID != "" && h.Type != "" {
		return h, nil
	}
	return readEnvelope(r, off)
}

// readEnvelope decodes the whole line at off for its envelope.
func readEnvelope(r io.ReaderAt, off int64) (envelopeHead, error) {
	line, err := readLine(r, off, MaxLine)
	if err != nil {
		return envelopeHead{}, err
	}
	ev, problem := decodeLine(line)
	if problem != "" {
		return envelopeHead{}, errors.New(problem)
	}
	return envelopeHead{Seq: ev.Seq, RunID: ev.RunID, Type: ev.Type}, nil
}

// readLine reads the line at off, up to its newline or the end, and at most
// limit bytes.
func readLine(r io.ReaderAt, off int64, limit int) ([]byte, error) {
	var line []byte
	buf := make([]byte, tailChunk)
	for len(line) < limit {
		n, err := r.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return append(line, buf[:i]...), nil
		}
		line = append(line, buf[:n]...)
		off += int64(n)
		if errors.Is(err, io.EOF) {
			return line, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("line longer than %d bytes", limit)
}

// tailLines returns the whole lines in the last max bytes of the first end
// bytes of r (end is just after a newline, or 0), newest first, without
// their newlines. A line only partly inside that window is left out.
func tailLines(r io.ReaderAt, end, max int64) ([][]byte, error) {
	start := end - min(end, max)
	if start > 0 {
		start-- // the byte before the window says whether it starts a line
	}
	buf := make([]byte, end-start)
	if _, err := r.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if start > 0 {
		// Keep only what follows the first newline: the bytes before it
		// end a line that began before the window.
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil, nil
		}
		buf = buf[i+1:]
	}
	if len(buf) == 0 {
		return nil, nil
	}
	lines := bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n"))
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return lines, nil
}
