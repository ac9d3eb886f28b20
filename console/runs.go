package console

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/knotd/knotd/transcript"
)

// runIndex keeps the summaries of a vault's runs. A finished run's
// summary does not change, so it is read once; only new runs and those
// still going are read again, so a page refreshed every few seconds costs
// a directory listing and the runs in progress.
type runIndex struct {
	dir string

	mu   sync.Mutex
	done map[string]transcript.Summary // finished runs, by id
}

// list returns the summaries of every run, newest first.
func (x *runIndex) list() ([]transcript.Summary, error) {
	if x.dir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(x.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("console: list the runs: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done == nil {
		x.done = make(map[string]transcript.Summary)
	}
	out := make([]transcript.Summary, 0, len(entries))
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), transcript.Ext)
		if !ok || !e.Type().IsRegular() || transcript.CheckRunID(id) != nil {
			continue
		}
		seen[id] = true
		if s, ok := x.done[id]; ok {
			out = append(out, s)
			continue
		}
		s, ok := transcript.Summarize(x.dir, id)
		if !ok {
			continue // gone meanwhile (pruned)
		}
		if s.Finished {
			x.done[id] = s
		}
		out = append(out, s)
	}
	for id := range x.done {
		if !seen[id] {
			delete(x.done, id)
		}
	}
	slices.SortFunc(out, func(a, b transcript.Summary) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.RunID, a.RunID)
	})
	return out, nil
}
