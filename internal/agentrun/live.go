package agentrun

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/agentrun/internal/textbound"
	"github.com/knotd/knotd/internal/transcript"
)

// How a plain agent's standard output reaches Request.OnOutput.
const (
	// liveEvery is the longest output waits before it is handed over.
	liveEvery = 250 * time.Millisecond
	// liveChunk is the most output held back: past it, it is handed over
	// at once.
	liveChunk = 16 << 10
)

// rawParser is an outputParser for an agent whose output is not a stream
// of content blocks (a command, llm, ollama): its standard output is handed
// to Request.OnOutput as it comes, as text-only blocks (textLive), and
// streamed makes the attempt's message start with those blocks.
type rawParser interface {
	outputParser
	streamed(p *parsed, sent []transcript.Block)
}

// textLive hands the standard output an agent's Result keeps (the first
// Runner.MaxStdout bytes) to live as it comes: one text-only block at a
// time, at most liveEvery after it was printed, or at once when liveChunk
// bytes are waiting. A block ends after a line when it can, else after a
// space or tab, so that a secret the transcript masks is never cut in two
// (a run of liveChunk bytes without either is cut anyway). Blank output is
// held until text follows it. write is called by the goroutine copying
// the output, the flushes by a timer's; the mutex makes them take turns,
// and close, after the process's output is all copied, hands over the
// rest: live is never called after close returned.
type textLive struct {
	live    func(transcript.AssistantMessage)
	every   time.Duration
	mu      sync.Mutex
	pending []byte
	timer   *time.Timer
	closed  bool
	sent    []transcript.Block // what live was given, read after close
}

func newTextLive(live func(transcript.AssistantMessage)) *textLive {
	return &textLive{live: live, every: liveEvery}
}

func (s *textLive) write(p []byte) {
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

// Add and Close make textLive proc.Run's Live.
func (s *textLive) Add(kept []byte) { s.write(kept) }
func (s *textLive) Close()          { s.close() }

// tick hands over what waited liveEvery. What cannot be cut yet waits for
// the next output, or the end.
func (s *textLive) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timer = nil
	if !s.closed {
		s.flush(false)
	}
}

// close hands over what is left; the output is over.
func (s *textLive) close() {
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
func (s *textLive) flush(final bool) {
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

// streamed makes a plain-text reply's message the blocks handed over live
// (all of the output the Result keeps), instead of one block of it.
func (textParser) streamed(p *parsed, sent []transcript.Block) {
	if len(sent) == 0 {
		return
	}
	if p.message == nil {
		p.message = &transcript.AssistantMessage{Format: transcript.FormatText}
	}
	p.message.Blocks = sent
}

// streamed makes a JSON reply's message the output as it was handed over
// live, then the reply read from it.
func (jsonParser) streamed(p *parsed, sent []transcript.Block) {
	if len(sent) == 0 {
		return
	}
	if p.message == nil {
		p.message = &transcript.AssistantMessage{Format: transcript.FormatText, Blocks: []transcript.Block{}}
	}
	p.message.Blocks = append(append([]transcript.Block(nil), sent...), p.message.Blocks...)
}
