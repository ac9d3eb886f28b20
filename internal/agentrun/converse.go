package agentrun

import (
	"time"

	"github.com/knotd/knotd/internal/agentrun/internal/proc"
)

// conversation is the client side of an agent CLI that is driven over its
// standard input and output with a request/response protocol (JSON-RPC
// lines, as Gemini CLI's ACP mode) instead of being given one prompt.
//
// proc.Run calls open once, before the process's output is read, then line
// for every line of standard output, in order, from the goroutine that
// copies it (never concurrently, never after proc.Run returned). Neither
// blocks: what they return is queued and written to standard input by a
// goroutine of proc.Run. When line reports done, standard input is closed
// after the queued messages, which tells the CLI to exit; one that has not
// exited a grace period later is stopped (proc.Result.Lingered). finish
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
// and line: proc.Run calls attach once, after open, before the agent
// starts, with the outbox's push and the grace period. The conversation
// closes the input itself (push with close set) when it is over.
type streamingTalk interface {
	attach(push func(msgs [][]byte, close bool) error, grace time.Duration)
}

// cancellingTalk is a conversation that asks the agent to stop when the
// run's context ends (ACP's session/cancel): proc.Run calls cancel before
// the process group is signalled. It returns within the grace period.
type cancellingTalk interface {
	cancel()
}

// talker is a driver whose CLI holds a conversation on its standard input
// and output: converse returns a fresh conversation for one attempt.
type talker interface {
	converse(a *attempt) conversation
}

// talkOf makes a conversation the Talk that proc.Run holds with the
// process; nil for none.
func talkOf(c conversation) *proc.Talk {
	if c == nil {
		return nil
	}
	t := &proc.Talk{Open: c.open, Line: c.line}
	if s, ok := c.(streamingTalk); ok {
		t.Attach = s.attach
	}
	if k, ok := c.(cancellingTalk); ok {
		t.Cancel = k.cancel
	}
	return t
}
