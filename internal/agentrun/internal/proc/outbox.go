package proc

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

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
