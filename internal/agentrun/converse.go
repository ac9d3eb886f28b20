package agentrun

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// conversation is the client side of an agent CLI that is driven over its
// standard input and output with a request/response protocol (JSON-RPC
// lines, as Gemini CLI's ACP mode) instead of being given one prompt.
//
// runProc calls open once, before the process's output is read, then line
// for every line of standard output, in order, from the goroutine that
// copies it (never concurrently, never after runProc returned). Neither
// blocks: what they return is queued and written to standard input by a
// goroutine of runProc. When line reports done, standard input is closed
// after the queued messages, which tells the CLI to exit; one that has not
// exited a grace period later is stopped (procResult.lingered). finish
// (the outputParser) is called after the process exited. The run's timeout
// and cancellation stop the process as for any agent, whatever the
// conversation's state.
type conversation interface {
	outputParser
	// open returns the messages to send first, each without its newline.
	open() [][]byte
	// line handles one line of standard output (without its newline) and
	// returns the messages to send in answer, and whether the
	// conversation is over.
	line(b []byte) (send [][]byte, done bool)
}

// streamingTalk is a conversation that writes to the agent's input on its
// own goroutines (an SDK's connection) rather than only in answer to open
// and line: runProc calls attach once, after open, before the agent
// starts, with the outbox's push and the grace period. The conversation
// closes the input itself (push with close set) when it is over.
type streamingTalk interface {
	attach(push func(msgs [][]byte, close bool) error, grace time.Duration)
}

// cancellingTalk is a conversation that asks the agent to stop when the
// run's context ends (ACP's session/cancel): runProc calls cancel before
// the process group is signalled. It returns within the grace period.
type cancellingTalk interface {
	cancel()
}

// talker is a driver whose CLI holds a conversation on its standard input
// and output: converse returns a fresh conversation for one attempt.
type talker interface {
	converse(a *attempt) conversation
}

// maxOutbox bounds the bytes of answers waiting to be written to an agent
// that does not read its input, beyond the first messages: a CLI that
// floods requests without reading the answers fails the attempt instead of
// growing knotd's memory.
const maxOutbox = 4 << 20

// errOutboxFull is a talkErr: the agent did not read its input.
var errOutboxFull = fmt.Errorf("the agent sent requests but did not read the %d bytes of answers waiting for it", maxOutbox)

// outbox is the queue of messages for an agent's standard input, filled by
// the conversation (on the stdout copier goroutine) and drained by the
// writer goroutine.
type outbox struct {
	mu      sync.Mutex
	msgs    [][]byte
	pending int // bytes queued by answers (not open)
	closed  bool
	err     error
	wake    chan struct{} // capacity 1: something was queued or closed
}

func newOutbox(first [][]byte) *outbox {
	return &outbox{msgs: first, wake: make(chan struct{}, 1)}
}

// push queues answers; close, when set, marks the end of the conversation.
// Past maxOutbox the outbox fails: it is closed with errOutboxFull and
// push returns that error.
func (o *outbox) push(msgs [][]byte, close bool) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return o.err
	}
	for _, m := range msgs {
		o.pending += len(m) + 1
		o.msgs = append(o.msgs, m)
	}
	if o.pending > maxOutbox {
		o.closed, o.err, o.msgs = true, errOutboxFull, nil
	}
	if close {
		o.closed = true
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return o.err
}

// take returns what is queued, whether the outbox is closed, and its error.
func (o *outbox) take() ([][]byte, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	msgs := o.msgs
	o.msgs = nil
	o.pending = 0
	return msgs, o.closed, o.err
}

// drain writes the queued messages to w, one line each, until the outbox
// is closed and empty (then it closes w and reports closed) or stop is
// closed, or a write fails. It returns the outbox's, write or close error,
// nil when stopped.
func (o *outbox) drain(w io.WriteCloser, stop <-chan struct{}) (closed bool, err error) {
	for {
		msgs, closed, err := o.take()
		for _, m := range msgs {
			if _, werr := w.Write(append(m, '\n')); werr != nil {
				return false, fmt.Errorf("write to the agent's input: %w", werr)
			}
		}
		if closed {
			if cerr := w.Close(); cerr != nil && !errors.Is(cerr, io.ErrClosedPipe) {
				return true, errors.Join(err, fmt.Errorf("close the agent's input: %w", cerr))
			}
			return true, err
		}
		select {
		case <-o.wake:
		case <-stop:
			return false, nil
		}
	}
}
