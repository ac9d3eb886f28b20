// Package livetext hands what a plain agent prints (not a stream of
// content blocks: a command, llm, ollama) to a watcher as it comes, as
// text-only transcript blocks cut where a secret the transcript masks is
// never cut in two.
package livetext

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/textbound"
	"github.com/knotd/knotd/internal/transcript"
)

// How a plain agent's standard output reaches the watcher.
const (
	// liveEvery is the longest output waits before it is handed over.
	liveEvery = 250 * time.Millisecond
	// liveChunk is the most output held back: past it, it is handed over
	// at once.
	liveChunk = 16 << 10
)

// Text hands the standard output an agent's Result keeps (the first
// Runner.MaxStdout bytes) to live as it comes: one text-only block at a
// time, at most liveEvery after it was printed, or at once when liveChunk
// bytes are waiting. A block ends after a line when it can, else after a
// space or tab, so that a secret the transcript masks is never cut in two
// (a run of liveChunk bytes without either is cut anyway). Blank output is
// held until text follows it. write is called by the goroutine copying
// the output, the flushes by a timer's; the mutex makes them take turns,
// and close, after the process's output is all copied, hands over the
// rest: live is never called after close returned.
type Text struct {
	live    func(transcript.AssistantMessage)
	every   time.Duration
	mu      sync.Mutex
	pending []byte
	timer   *time.Timer
	closed  bool
	sent    []transcript.Block // what live was given, read after close
}

// New returns a Text that hands the output to live.
func New(live func(transcript.AssistantMessage)) *Text {
	return &Text{live: live, every: liveEvery}
}

func (s *Text) write(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(p) == 0 {
		return
	}
	s.pending = append(s.pending, p...)
	if len(s.pending) >= liveChunk {
		s.flush(false)
	}
	if len(s.pending) > 0 && s.timer == nil {
		s.timer = time.AfterFunc(s.every, s.tick)
	}
}

// Add and Close make a Text proc.Run's Live.
func (s *Text) Add(kept []byte) { s.write(kept) }
func (s *Text) Close()          { s.close() }

// Sent returns the blocks handed over; read it after Close.
func (s *Text) Sent() []transcript.Block { return s.sent }

// tick hands over what waited liveEvery. What cannot be cut yet waits for
// the next output, or the end.
func (s *Text) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	if !s.closed {
		s.flush(false)
	}
}

// close hands over what is left; the output is over.
func (s *Text) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.flush(true)
	s.closed = true
}

// flush hands over the pending output up to its last line break (or, in a
// line, its last space or tab; or liveChunk bytes of a line that has
// neither); all of it when final. It is called with mu held.
func (s *Text) flush(final bool) {
	cut := len(s.pending)
	if !final {
		cut = bytes.LastIndexByte(s.pending, '\n') + 1
		if cut == 0 {
			cut = bytes.LastIndexAny(s.pending, " \t") + 1
		}
		if cut == 0 && len(s.pending) >= liveChunk {
			if cut = textbound.CutBack(string(s.pending), liveChunk); cut == 0 {
				cut = liveChunk // no rune starts there: not UTF-8 anyway
			}
		}
	}
	text := string(s.pending[:cut])
	if strings.TrimSpace(text) == "" {
		if final {
			s.pending = nil
		}
		return // blank: it goes with the text after it
	}
	s.pending = append(s.pending[:0], s.pending[cut:]...)
	b := transcript.Block{Type: transcript.BlockText, Fidelity: transcript.TextOnly, Text: strings.ToValidUTF8(text, "\uFFFD")}
	s.sent = append(s.sent, b)
	s.live(transcript.AssistantMessage{Format: transcript.FormatText, Blocks: []transcript.Block{b}})
}
