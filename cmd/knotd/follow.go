package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/knotd/knotd/internal/vault"
)

// followInterval is how often knotd runs -f looks for new runs.
const followInterval = 250 * time.Millisecond

// followSettle is how long knotd runs -f waits for a transcript that has
// no whole line yet, or ends in a part of one, to be written on: the run
// is starting, or writing a line. Past it the file is shown as it is (a
// crash left it so).
const followSettle = 5 * time.Second

// followDefault is how many runs knotd runs -f lists before following,
// when --limit does not say.
const followDefault = 10

// followRuns is knotd runs -f: it prints the newest runs, oldest first,
// then a line for every run that appears or changes state (starts,
// finishes), until ctx ends (SIGINT, SIGTERM), when it returns nil. It
// polls the runs folder with a ticker, reading the transcripts again only
// when the folder's listing changed, so it also follows a folder that does
// not exist yet (knotd has not run on the vault) and one on a network
// mount.
func followRuns(ctx context.Context, root string, o runsOptions, w io.Writer) error {
	if o.limit == 0 {
		o.limit = followDefault
	}
	if o.strand != "" {
		if _, err := strandArg(root, o.strand); err != nil {
			return err
		}
	}
	if !o.jsonOut {
		fmt.Fprintf(w, "%-20s  %-10s  %-10s  %-8s  %-8s  %-10s  %s\n", "TIME", "RUN", "OUTCOME", "DURATION", "EVENT", "AGENT", "NOTE")
	}
	seen := map[string]string{} // run id -> the state last printed
	var last []dirEntryStamp
	first := true
	tick := time.NewTicker(followInterval)
	defer tick.Stop()
	for {
		if err := followOnce(root, &o, w, seen, &last, first); err != nil {
			return err
		}
		first = false
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// dirEntryStamp is what followRuns compares of the runs folder between
// two looks: a file's name, size and modification time.
type dirEntryStamp struct {
	name    string
	size    int64
	modTime time.Time
}

// followOnce looks at the runs folder once and prints what changed since
// the last look. The first look prints the newest o.limit runs; later ones
// print every run whose state changed, whatever the limit.
func followOnce(root string, o *runsOptions, w io.Writer, seen map[string]string, last *[]dirEntryStamp, first bool) error {
	dir, found, err := vault.RunsDir("", root)
	if err != nil || !found {
		return err
	}
	stamps, err := stampDir(dir)
	if err != nil {
		return err
	}
	if !first && slices.Equal(stamps, *last) {
		return nil
	}
	*last = stamps
	opts := *o
	if !first {
		opts.limit = 0
	}
	runs, err := listedRuns(root, dir, opts)
	if err != nil {
		return err
	}
	short, err := shortIDs(dir)
	if err != nil {
		return err
	}
	slices.Reverse(runs) // oldest first: new lines come at the bottom
	now := time.Now()
	for _, r := range runs {
		if (r.Empty || r.Torn) && now.Sub(r.Modified) < followSettle {
			*last = nil // look again at the next tick, changed or not
			continue
		}
		outcome, dur := runColumns(r)
		state := outcome + " " + dur
		if seen[r.RunID] == state {
			continue
		}
		seen[r.RunID] = state
		if o.jsonOut {
			b, err := json.Marshal(toJSON(r, short))
			if err != nil {
				return fmt.Errorf("write runs: %w", err)
			}
			if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
				return fmt.Errorf("write runs: %w", err)
			}
			continue
		}
		if _, err := fmt.Fprintf(w, "%-20s  %-10s  %-10s  %-8s  %-8s  %-10s  %s\n", r.Time.UTC().Format(timeLayout), orDash(short[r.RunID]), outcome, dur,
			r.Event, orDash(r.Agent), orDash(r.Strand)); err != nil {
			return fmt.Errorf("write runs: %w", err)
		}
	}
	if first {
		// Runs not listed (beyond the limit) are not news either.
		all, err := listedRuns(root, dir, runsOptions{strand: o.strand})
		if err != nil {
			return err
		}
		for _, r := range all {
			if _, ok := seen[r.RunID]; !ok {
				outcome, dur := runColumns(r)
				seen[r.RunID] = outcome + " " + dur
			}
		}
	}
	return nil
}

// stampDir returns the name, size and modification time of every file in
// dir, sorted by name; none if dir does not exist (yet).
func stampDir(dir string) ([]dirEntryStamp, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no run yet
	}
	if err != nil {
		return nil, fmt.Errorf("follow runs: %w", err)
	}
	stamps := make([]dirEntryStamp, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue // removed meanwhile (pruned)
		}
		stamps = append(stamps, dirEntryStamp{e.Name(), fi.Size(), fi.ModTime()})
	}
	return stamps, nil
}
