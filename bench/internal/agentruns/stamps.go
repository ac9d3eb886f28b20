// Package agentruns counts the agent runs a scenario caused, two ways:
// the stamps the instant agent (bench/instantagent) appends to its stamps
// file as it starts, read as the file grows, and the run markers knotd
// wrote into the tie-offs.
package agentruns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
)

// Stamp is one line the instant agent appended to its stamps file: when
// it started and for which strand.
type Stamp struct {
	At     time.Time
	Strand string
	Event  string
	Run    string
}

// Log reads an instant agent's stamps file as it grows. It is used
// by one goroutine.
type Log struct {
	Path    string // the stamps file
	off     int64
	partial []byte
	all     []Stamp
	// Trim, if set, is removed from the front of each strand (the vault
	// directory, for the peers that pass absolute paths).
	Trim string
}

// Seen returns the stamps read so far, without reading the file again.
func (s *Log) Seen() []Stamp { return s.all }

// Poll reads the lines appended since the last call and returns every
// Stamp so far.
func (s *Log) Poll() ([]Stamp, error) {
	f, err := os.Open(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return s.all, nil
	}
	if err != nil {
		return nil, fmt.Errorf("stamps: %w", err)
	}
	defer f.Close() // read only
	if _, err := f.Seek(s.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("stamps: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("stamps: %w", err)
	}
	s.off += int64(len(b))
	s.partial = append(s.partial, b...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		st, err := parseStamp(string(s.partial[:i]))
		if err != nil {
			return nil, fmt.Errorf("stamps %s: %w", s.Path, err)
		}
		if s.Trim != "" {
			st.Strand = strings.TrimPrefix(st.Strand, s.Trim)
		}
		s.all = append(s.all, st)
		s.partial = s.partial[i+1:]
	}
	return s.all, nil
}

func parseStamp(line string) (Stamp, error) {
	f := strings.Fields(line)
	if len(f) != 4 {
		return Stamp{}, fmt.Errorf("malformed line %q", line)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return Stamp{}, fmt.Errorf("malformed line %q: %w", line, err)
	}
	return Stamp{At: time.Unix(0, ns), Strand: f[1], Event: f[2], Run: f[3]}, nil
}

// stampPoll is how often waiting code looks at a stamps file.
const stampPoll = 2 * time.Millisecond

// Wait polls until ok holds for the stamps so far, or ctx ends.
func (s *Log) Wait(ctx context.Context, ok func([]Stamp) bool) ([]Stamp, error) {
	t := time.NewTicker(stampPoll)
	defer t.Stop()
	for {
		all, err := s.Poll()
		if err != nil {
			return nil, err
		}
		if ok(all) {
			return all, nil
		}
		select {
		case <-ctx.Done():
			return all, fmt.Errorf("waiting for agent runs: %w", context.Cause(ctx))
		case <-t.C:
		}
	}
}

// Settle polls until no stamp has been added for quiet, or ctx ends, and
// returns the stamps so far. It is how the harness waits for tools that
// say nothing when they are done (and for duplicates that come late).
func (s *Log) Settle(ctx context.Context, quiet time.Duration) ([]Stamp, error) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	n, since := -1, time.Now()
	for {
		all, err := s.Poll()
		if err != nil {
			return nil, err
		}
		if len(all) != n {
			n, since = len(all), time.Now()
		} else if time.Since(since) >= quiet {
			return all, nil
		}
		select {
		case <-ctx.Done():
			return all, nil // the deadline is the caller's: report what came
		case <-t.C:
		}
	}
}

// HasStrand returns a predicate for Wait: a stamp for rel exists.
func HasStrand(rel string) func([]Stamp) bool {
	return func(all []Stamp) bool {
		for _, s := range all {
			if s.Strand == rel {
				return true
			}
		}
		return false
	}
}

// Tally counts the stamps of each strand.
func Tally(all []Stamp) map[string]int {
	m := make(map[string]int, len(all))
	for _, s := range all {
		m[s.Strand]++
	}
	return m
}

// ExactlyOnce compares runs per strand with the strands that should have
// run once each: how many of them did not run, how many runs were extra
// (a second run of a target, or any run of another strand).
func ExactlyOnce(runs map[string]int, targets []string) (missed, extra int) {
	want := make(map[string]bool, len(targets))
	for _, t := range targets {
		want[t] = true
		switch n := runs[t]; {
		case n == 0:
			missed++
		case n > 1:
			extra += n - 1
		}
	}
	for s, n := range runs {
		if !want[s] {
			extra += n
		}
	}
	return missed, extra
}
