package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"
)

// Spec describes one process to run.
type Spec struct {
	Argv []string
	Dir  string
	Env  []string
	// Stdin is written to the process's standard input when HasStdin;
	// otherwise standard input is the null device.
	Stdin    string
	HasStdin bool
	// Grace is how long after SIGTERM (or after the process exited while
	// something still holds its output pipes) before everything is killed.
	Grace                         time.Duration
	MaxStdout, MaxStderr, MaxLine int
	// OnLine, when set, receives every line of standard output as it
	// arrives.
	OnLine func([]byte)
	// Live, when set, receives the standard output kept (MaxStdout) as it
	// arrives; Run closes it before it returns.
	Live Live
	// Talk, when set, holds a conversation with the process on its
	// standard input and output; Stdin is not used.
	Talk *Talk
	// Groups, when set, records the process's group while it runs, with
	// RunID (see Group).
	Groups GroupRecorder
	RunID  string
}

// Live receives the standard output a Run keeps as it arrives: Add from
// the goroutine copying the output, Close once all of it is copied.
type Live interface {
	Add(kept []byte)
	Close()
}

// Talk is a conversation with a process over its standard input and
// output (JSON-RPC lines, as ACP). Run calls Open once, before the
// process's output is read, then Line for every line of standard output,
// in order, from the goroutine that copies it (never concurrently, never
// after Run returned). Neither blocks: what they return is queued and
// written to standard input by a goroutine of Run. When Line reports done,
// standard input is closed after the queued messages, which tells the
// process to exit; one that has not exited a grace period later is
// stopped (Result.Lingered). The context's end stops the process whatever
// the conversation's state.
type Talk struct {
	// Open returns the messages to send first, each without its newline.
	Open func() [][]byte
	// Line handles one line of standard output (without its newline) and
	// returns the messages to send in answer, and whether the
	// conversation is over.
	Line func(b []byte) (send [][]byte, done bool)
	// Attach, when set, is called once, after Open, before the process
	// starts, with the outbox's push and the grace period: for a
	// conversation that writes to the input on its own goroutines, and
	// closes it itself (push with close set) when it is over.
	Attach func(push func(msgs [][]byte, close bool) error, grace time.Duration)
	// Cancel, when set, is called when the context ends, before the
	// process group is signalled, to ask the process to stop; it returns
	// within the grace period.
	Cancel func()
}

// Result is what one process did.
type Result struct {
	// StartErr is set when the process could not be started.
	StartErr error
	// ExitCode is the exit status, -1 when the process did not exit by
	// itself.
	ExitCode int
	// WaitErr is exec.Cmd.Wait's error, for messages.
	WaitErr error
	// Interrupted reports that the context ended while the process ran and
	// it was signalled to stop; the caller tells timeout from cancellation
	// by the context.
	Interrupted bool
	// PipesHeld reports that the process exited but a descendant kept its
	// output open until the grace period ran out.
	PipesHeld bool
	// KillErr is an error killing what was left of the process group.
	KillErr error
	// TalkErr is an error writing a conversation's messages to the
	// process (it stopped reading, or exited early).
	TalkErr error
	// Lingered reports that a conversation was over and the process's
	// input closed, but it did not exit within grace, so it was stopped
	// (not by the context).
	Lingered bool

	Stdout       []byte
	StdoutN      int64
	StdoutTrunc  bool
	Stderr       string
	StderrTrunc  bool
	DroppedLines int
}

// Run runs one process to completion, bounded by ctx: when ctx ends,
// the process group gets SIGTERM, and SIGKILL spec.Grace later. Whatever is
// left of the group is killed when Run returns, so no descendant
// outlives the run. The goroutines exec.Cmd starts to copy the pipes are
// waited for by Wait (at most spec.Grace after the process exits).
func Run(ctx context.Context, spec Spec) Result {
	res := Result{ExitCode: -1}
	if spec.Live != nil {
		// After Wait: the output is all copied.
		defer spec.Live.Close()
	}
	cmd := exec.CommandContext(ctx, spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	if spec.HasStdin && spec.Talk == nil {
		cmd.Stdin = strings.NewReader(spec.Stdin)
	}
	out := &capWriter{max: spec.MaxStdout, live: spec.Live}
	var (
		box   *outbox
		stdin io.WriteCloser
	)
	if spec.Talk != nil {
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			res.StartErr = fmt.Errorf("standard input pipe: %w", err)
			return res
		}
		box = newOutbox(spec.Talk.Open())
		if spec.Talk.Attach != nil {
			spec.Talk.Attach(box.push, spec.Grace)
		}
		talk, onLine := spec.Talk, spec.OnLine
		out.lines = &lineSplitter{max: spec.MaxLine, fn: func(b []byte) {
			if onLine != nil {
				onLine(b)
			}
			send, done := talk.Line(b)
			// An error closes the outbox; the writer reports it.
			_ = box.push(send, done)
		}}
	} else if spec.OnLine != nil {
		out.lines = &lineSplitter{max: spec.MaxLine, fn: spec.OnLine}
	}
	errTail := &tailWriter{max: spec.MaxStderr}
	cmd.Stdout, cmd.Stderr = out, errTail
	setProcAttrs(cmd)
	var interrupted atomic.Bool
	cmd.Cancel = func() error {
		interrupted.Store(true)
		if spec.Talk != nil && spec.Talk.Cancel != nil {
			spec.Talk.Cancel() // at most spec.Grace
		}
		return interrupt(cmd.Process)
	}
	cmd.WaitDelay = spec.Grace

	if err := cmd.Start(); err != nil {
		res.StartErr = err
		return res
	}
	if spec.Groups != nil {
		if g, ok := groupOf(cmd.Process.Pid, spec.RunID); ok {
			spec.Groups.Started(g)
			// After killGroup below: nothing of the group is left.
			defer spec.Groups.Ended(g)
		}
	}
	type writerEnd struct {
		err    error
		linger *time.Timer // started when the conversation closed the input
	}
	var (
		stop     chan struct{}
		written  chan writerEnd
		lingered atomic.Bool
		kill     atomic.Pointer[time.Timer] // SIGKILL after SIGTERM
	)
	if box != nil {
		// The writer ends when the conversation is over (then the process
		// has grace to exit before it is stopped), when a write fails
		// (Wait closes the pipe once the process exited, which also ends a
		// blocked write), or when stopped below.
		stop, written = make(chan struct{}), make(chan writerEnd, 1)
		go func() {
			var end writerEnd
			var closed bool
			closed, end.err = box.drain(stdin, stop)
			if closed && end.err == nil {
				end.linger = time.AfterFunc(spec.Grace, func() {
					lingered.Store(true)
					// Errors: the process is gone already, nothing to stop.
					_ = interrupt(cmd.Process)
					kill.Store(time.AfterFunc(spec.Grace, func() {
						_ = cmd.Process.Kill()
						_ = killGroup(cmd.Process)
					}))
				})
			}
			written <- end
		}()
	}
	err := cmd.Wait()
	if box != nil {
		close(stop)
		end := <-written
		if end.linger != nil {
			end.linger.Stop()
		}
		if k := kill.Load(); k != nil {
			k.Stop()
		}
		res.TalkErr, res.Lingered = end.err, lingered.Load()
	}
	res.KillErr = killGroup(cmd.Process)
	if out.lines != nil {
		out.lines.flush()
		res.DroppedLines = out.lines.dropped
	}
	res.WaitErr = err
	res.Interrupted = interrupted.Load()
	res.PipesHeld = errors.Is(err, exec.ErrWaitDelay)
	if st := cmd.ProcessState; st != nil {
		res.ExitCode = st.ExitCode()
	}
	res.Stdout, res.StdoutN, res.StdoutTrunc = out.buf, out.n, out.truncated()
	res.Stderr, res.StderrTrunc = errTail.String(), errTail.truncated()
	return res
}

// Describe says in a few words how the process ended, for a reason.
func (r Result) Describe() string {
	switch {
	case r.StartErr != nil:
		return "could not start: " + r.StartErr.Error()
	case r.ExitCode > 0:
		return fmt.Sprintf("exit status %d", r.ExitCode)
	case r.ExitCode < 0 && r.WaitErr != nil:
		return r.WaitErr.Error() // "signal: killed"
	case r.ExitCode < 0:
		return "did not exit"
	}
	return "exit status 0"
}
