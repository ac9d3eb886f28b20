package transcript

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/strand"
)

// Summary is what List tells about one run.
type Summary struct {
	// RunID is the run's id; Path its transcript file.
	RunID, Path string
	// Time is when run.started was written (the file's modification time
	// when the first line cannot be read).
	Time time.Time
	// Strand, Event and Agent come from run.started.
	Strand string
	Event  strand.EventType
	Agent  string
	// Finished reports that a run.finished line was found; Outcome,
	// Duration, Reason and Usage come from it.
	Finished bool
	Outcome  string
	Duration time.Duration
	Reason   string
	Usage    *Usage
	// Torn reports that the file ends in a torn line (a crash, or a line
	// being written); Empty that it holds no whole line yet (a run that is
	// starting, or a crash); Modified is the file's modification time.
	Torn, Empty bool
	Modified    time.Time
	// Problem says why the file could not be fully summarised, empty when
	// it could.
	Problem string
}

// Bounds of what List reads of each file.
const (
	// listHead is the longest first line List reads.
	listHead = 1 << 20
	// listTail is how much of the end List searches for run.finished,
	// which a run writes after its (possibly large) assistant message.
	listTail = 64 << 10
)

// List summarises the transcripts in dir, newest first (by the time of
// run.started, then by run id). It reads only each file's first line and
// its last 64 KiB, so its cost does not grow with the size of the runs. Only
// regular files named <run-id>.jsonl are listed; symbolic links are
// skipped. A file that cannot be read is listed with its Problem. A
// missing dir has no runs.
func List(dir string) ([]Summary, error) {
	return ListSince(dir, time.Time{})
}

// ListSince is List of the runs started at or after since (by their
// run.started time). A run whose id (a UUID v7 carries the millisecond it
// was made) is older than since is left out without its file being read,
// so the cost is about that of the runs listed, not of every run kept. An
// id can only be later than its run's start (ids never go back, even
// when the clock does), so the start time decides the others.
func ListSince(dir string, since time.Time) ([]Summary, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: list %s: %w", dir, err)
	}
	var out []Summary
	for _, e := range entries {
		id, ok := runIDOf(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if !since.IsZero() {
			if t, ok := idTime(id); ok && t.Before(since.Truncate(time.Millisecond)) {
				continue
			}
		}
		s := summarize(filepath.Join(dir, e.Name()), id)
		if !since.IsZero() && s.Problem == "" && s.Time.Before(since) {
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.RunID, a.RunID)
	})
	return out, nil
}

// Summarize is List's summary of the run runID in dir; ok is false when
// the run has no transcript there (or the id is not a run id).
func Summarize(dir, runID string) (s Summary, ok bool) {
	if checkRunID(runID) != nil {
		return s, false
	}
	p := Path(dir, runID)
	if _, err := os.Lstat(p); err != nil {
		return s, false
	}
	return summarize(p, runID), true
}

// idTime returns the time a UUID v7 run id was made.
func idTime(id string) (time.Time, bool) {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return time.Time{}, false
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec), true
}

// runIDOf returns the run id of a transcript's file name.
func runIDOf(name string) (string, bool) {
	id, ok := strings.CutSuffix(name, Ext)
	return id, ok && checkRunID(id) == nil
}

// ReadRun reads the transcript of run runID in dir (see Read); it refuses
// a run id that is not a canonical UUID, so the id cannot name another
// file.
func ReadRun(dir, runID string) ([]Event, []Warning, error) {
	if err := checkRunID(runID); err != nil {
		return nil, nil, err
	}
	return ReadFile(Path(dir, runID))
}

func summarize(path, runID string) Summary {
	s := Summary{RunID: runID, Path: path}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		s.Problem = err.Error()
		return s
	}
	defer f.Close() // read only: nothing to lose
	info, err := f.Stat()
	if err != nil {
		s.Problem = err.Error()
		return s
	}
	s.Time, s.Modified = info.ModTime(), info.ModTime()
	if !info.Mode().IsRegular() {
		s.Problem = errNotRegular.Error()
		return s
	}
	end, err := lastNewline(f, info.Size())
	if err != nil {
		s.Problem = err.Error()
		return s
	}
	s.Torn = end < info.Size()

	problem := func(p string) {
		if s.Problem == "" {
			s.Problem = p
		}
	}
	if end == 0 {
		s.Empty = true
		problem("no whole line")
		return s
	}
	if first, err := readLine(f, 0, listHead); err != nil {
		problem("first line: " + err.Error())
	} else if st, t, p := startedOf(first); p != "" {
		problem(p)
	} else {
		s.Time, s.Strand, s.Event, s.Agent = t, st.Strand, st.Event, st.Agent
	}

	// run.finished is usually within the last few KiB (only a tie-off
	// line follows it); look there first, then in the whole window.
	for _, window := range []int64{8 << 10, listTail} {
		lines, err := tailLines(f, end, window)
		if err != nil {
			problem(err.Error())
			return s
		}
		if s.findFinished(lines, problem) || window >= end {
			break
		}
	}
	return s
}

// findFinished looks for run.finished among lines, newest first, and
// reports whether it found it.
func (s *Summary) findFinished(lines [][]byte, problem func(string)) bool {
	for _, l := range lines {
		ev, p := decodeLine(l)
		if p != "" || ev.Type != RunFinished {
			continue
		}
		if pl, err := ev.Payload(); err != nil {
			problem(err.Error())
		} else {
			fin := pl.(Finished)
			s.Finished, s.Outcome, s.Duration, s.Reason, s.Usage = true, fin.Outcome, fin.Duration, fin.Reason, fin.Usage
		}
		return true
	}
	return false
}

// startedOf decodes a first line as run.started.
func startedOf(line []byte) (Started, time.Time, string) {
	ev, p := decodeLine(line)
	if p != "" {
		return Started{}, time.Time{}, "first line: " + p
	}
	if ev.Type != RunStarted {
		return Started{}, time.Time{}, fmt.Sprintf("first line is %s, not %s", ev.Type, RunStarted)
	}
	pl, err := ev.Payload()
	if err != nil {
		return Started{}, time.Time{}, err.Error()
	}
	return pl.(Started), ev.Time, ""
}
