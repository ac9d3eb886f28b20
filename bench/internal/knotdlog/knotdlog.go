// Package knotdlog reads knotd's JSON log (--log-format json) as knotd
// writes it to its standard error, and waits for the lines the bench
// needs: runs started and finished, the watcher ready.
package knotdlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Messages knotd logs that the harness waits for or counts (vault and
// watcher packages, --log-format json).
const (
	MsgRunStarted  = "run started"
	MsgRunFinished = "run finished"
	MsgWatching    = "watcher: watching"
	MsgOverflow    = "watcher: the kernel's event queue overflowed"
	MsgHeap        = "heap profile written" // knotd-profiled
)

// Line is one JSON log line of knotd, with the fields the harness uses.
type Line struct {
	Time     time.Time `json:"time"`
	Level    string    `json:"level"`
	Msg      string    `json:"msg"`
	Strand   string    `json:"strand"`
	Event    string    `json:"event"`
	Run      string    `json:"run"`
	Outcome  string    `json:"outcome"`
	Took     int64     `json:"took"`     // watcher: watching, nanoseconds
	Watched  int       `json:"watched"`  // watcher: watching
	Strands  int       `json:"strands"`  // first contact
	Duration int64     `json:"duration"` // run finished, nanoseconds
	Reason   string    `json:"reason"`   // run finished: why it failed
}

// Book collects a process's JSON log lines as it writes them: it is the
// process's standard error (an io.Writer). Lines that are not JSON are
// kept apart to explain a failure. Write, Snapshot and Wait are safe to call
// concurrently.
type Book struct {
	mu      sync.Mutex
	partial []byte
	lines   []Line
	other   []string
	changed chan struct{} // closed and replaced on every new line
}

func NewBook() *Book { return &Book{changed: make(chan struct{})} }

// Write implements io.Writer.
func (b *Book) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.partial = append(b.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(b.partial, '\n')
		if i < 0 {
			break
		}
		line := b.partial[:i]
		var l Line
		if err := json.Unmarshal(line, &l); err != nil || l.Msg == "" {
			b.other = append(b.other, string(line))
			if len(b.other) > 50 {
				b.other = b.other[1:]
			}
		} else {
			b.lines = append(b.lines, l)
		}
		b.partial = b.partial[i+1:]
		added = true
	}
	if added {
		close(b.changed)
		b.changed = make(chan struct{})
	}
	return len(p), nil
}

// Snapshot returns the lines so far.
func (b *Book) Snapshot() []Line {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Line(nil), b.lines...)
}

// Count returns how many lines so far have a message starting with msg.
func (b *Book) Count(msg string) int {
	n := 0
	for _, l := range b.Snapshot() {
		if strings.HasPrefix(l.Msg, msg) {
			n++
		}
	}
	return n
}

// Wait blocks until ok holds for the lines so far, or ctx ends.
func (b *Book) Wait(ctx context.Context, ok func([]Line) bool) error {
	for {
		b.mu.Lock()
		lines, changed := b.lines, b.changed
		done := ok(lines)
		b.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for knotd's log: %w%s", context.Cause(ctx), b.Tail())
		case <-changed:
		}
	}
}

// WaitText blocks until a line that is not JSON contains text (a peer
// tool's message), or ctx ends.
func (b *Book) WaitText(ctx context.Context, text string) error {
	for {
		b.mu.Lock()
		seen := slices.ContainsFunc(b.other, func(o string) bool { return strings.Contains(o, text) })
		changed := b.changed
		b.mu.Unlock()
		if seen {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %q: %w%s", text, context.Cause(ctx), b.Tail())
		case <-changed:
		}
	}
}

// Tail describes the last lines, to explain an error.
func (b *Book) Tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	for _, o := range b.other[max(0, len(b.other)-5):] {
		s.WriteString("\n  | " + o)
	}
	for _, l := range b.lines[max(0, len(b.lines)-5):] {
		fmt.Fprintf(&s, "\n  | %s %s %s", l.Level, l.Msg, l.Strand)
	}
	return s.String()
}

// HasMsg returns a predicate for Wait: some line's message starts with
// msg.
func HasMsg(msg string) func([]Line) bool {
	return func(ls []Line) bool {
		for _, l := range ls {
			if strings.HasPrefix(l.Msg, msg) {
				return true
			}
		}
		return false
	}
}

// Find returns the first line whose message starts with msg.
func Find(ls []Line, msg string) (Line, bool) {
	for _, l := range ls {
		if strings.HasPrefix(l.Msg, msg) {
			return l, true
		}
	}
	return Line{}, false
}

// CountMsg counts the lines with message msg.
func CountMsg(ls []Line, msg string) int {
	n := 0
	for _, l := range ls {
		if l.Msg == msg {
			n++
		}
	}
	return n
}
