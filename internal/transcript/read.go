package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLine is the longest line Read decodes; a longer one is skipped with a
// Warning. Recorders never write one in practice: prompts and captured
// output are bounded far below it.
const MaxLine = 128 << 20

// Warning is a problem Read found in a transcript that did not stop it.
type Warning struct {
	// Line is the 1-based line number; Offset the line's byte offset.
	Line   int
	Offset int64
	// Torn reports a last line without its newline: the writer was
	// stopped in the middle of it (a crash). It is not decoded.
	Torn bool
	// Problem says what is wrong.
	Problem string
}

// String formats the warning for people.
func (w Warning) String() string {
	return fmt.Sprintf("line %d (byte %d): %s", w.Line, w.Offset, w.Problem)
}

// Read decodes a transcript. It is tolerant: a torn last line, a line that
// is not a transcript event, an over-long line, a seq that does not follow
// the one before or a line of another run are reported as Warnings, and
// every other line decodes. Events of unknown types are kept with their
// raw payload. The error is only for a failure to read r; the events read
// up to it are returned with it.
func Read(r io.Reader) ([]Event, []Warning, error) {
	return read(r, MaxLine)
}

// read is Read with lines limited to maxLine bytes.
func read(r io.Reader, maxLine int) ([]Event, []Warning, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		events []Event
		warns  []Warning
		line   []byte
		off    int64
		n      int
	)
	for {
		n++
		start := off
		line = line[:0]
		long := false
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			off += int64(len(chunk))
			if !long && len(line)+len(chunk) <= maxLine+1 {
				line = append(line, chunk...)
			} else {
				long, line = true, line[:0]
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return events, warns, fmt.Errorf("transcript: read: %w", err)
		}
		warn := func(torn bool, format string, args ...any) {
			warns = append(warns, Warning{Line: n, Offset: start, Torn: torn, Problem: fmt.Sprintf(format, args...)})
		}
		switch {
		case err == io.EOF && off == start:
			return events, warns, nil
		case err == io.EOF:
			warn(true, "torn last line (%d bytes without a newline): the writer stopped in the middle of it", off-start)
			return events, warns, nil
		case long:
			warn(false, "line longer than %d bytes skipped", maxLine)
			continue
		}
		ev, problem := decodeLine(line)
		if problem != "" {
			warn(false, "%s", problem)
			continue
		}
		if k := len(events); k > 0 {
			if prev := events[k-1]; ev.Seq <= prev.Seq {
				warn(false, "seq %d does not follow seq %d", ev.Seq, prev.Seq)
			}
			if first := events[0]; ev.RunID != first.RunID {
				warn(false, "run id %q differs from the first line's %q", ev.RunID, first.RunID)
			}
		}
		events = append(events, ev)
	}
}

// decodeLine decodes one whole line (newline included), or says why not.
func decodeLine(line []byte) (Event, string) {
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return Event{}, "empty line"
	}
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, "not a transcript event: " + err.Error()
	}
	switch {
	case ev.Seq < 1:
		return Event{}, fmt.Sprintf("not a transcript event: seq %d", ev.Seq)
	case ev.Type == "":
		return Event{}, "not a transcript event: no type"
	case ev.RunID == "":
		return Event{}, "not a transcript event: no run id"
	}
	if d := bytes.TrimSpace(ev.Data); string(d) == "null" {
		ev.Data = nil
	}
	return ev, ""
}

// ReadFile reads the transcript at path (see Read). On Unix it does not
// follow a symbolic link at path.
func ReadFile(path string) (events []Event, warns []Warning, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("transcript: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("transcript: %w", cerr)
		}
	}()
	if info, err := f.Stat(); err != nil {
		return nil, nil, fmt.Errorf("transcript: %w", err)
	} else if !info.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("transcript: %s: %w", path, errNotRegular)
	}
	events, warns, err = Read(f)
	if err != nil {
		err = fmt.Errorf("%w (%s)", err, path)
	}
	return events, warns, err
}

var errNotRegular = errors.New("not a regular file")
