package console

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/knotd/knotd/internal/transcript"
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

// Bounds of lastOutput.
const (
	// outputWindow is how much of a transcript's end lastOutput reads.
	outputWindow = 64 << 10
	// outputShown is the most of it the overview shows.
	outputShown = 400
)

// lastOutput returns the end of the newest text the agent of run id wrote
// (its reply or reasoning so far), read from the last outputWindow bytes
// of its transcript: what the overview shows beside a run in progress.
func lastOutput(dir, id string) string {
	if transcript.CheckRunID(id) != nil {
		return ""
	}
	f, err := os.OpenFile(transcript.Path(dir, id), os.O_RDONLY|openFlags, 0)
	if err != nil {
		return ""
	}
	defer f.Close() // read only
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	start := max(fi.Size()-outputWindow, 0)
	buf := make([]byte, fi.Size()-start)
	if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	if start > 0 { // the first line is cut: skip it
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return ""
		}
		buf = buf[i+1:]
	}
	events, _, _ := transcript.Read(bytes.NewReader(buf)) // damaged lines are skipped
	for _, ev := range slices.Backward(events) {
		if ev.Type != transcript.MessageAssistant {
			continue
		}
		pl, err := ev.Payload()
		if err != nil {
			continue
		}
		for _, b := range slices.Backward(pl.(transcript.AssistantMessage).Blocks) {
			if b.Type == transcript.BlockText || b.Type == transcript.BlockThinking {
				s := strings.TrimSpace(b.Text)
				if len(s) > outputShown {
					s = "…" + strings.ToValidUTF8(s[len(s)-outputShown:], "")
				}
				return s
			}
		}
	}
	return ""
}
