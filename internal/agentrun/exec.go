package agentrun

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

// procSpec describes one process to run.
type procSpec struct {
	argv []string
	dir  string
	env  []string
	// stdin is written to the process's standard input when hasStdin;
	// otherwise standard input is the null device.
	stdin    string
	hasStdin bool
	// grace is how long after SIGTERM (or after the process exited while
	// something still holds its output pipes) before everything is killed.
	grace                         time.Duration
	maxStdout, maxStderr, maxLine int
	// onLine, when set, receives every line of standard output as it
	// arrives.
	onLine func([]byte)
	// live, when set, receives the standard output kept (maxStdout) as it
	// arrives; runProc closes it before it returns.
	live *textLive
	// talk, when set, holds a conversation with the process on its
	// standard input and output (see conversation); stdin is not used.
	talk conversation
	// groups, when set, records the process's group while it runs, with
	// runID (see Group).
	groups GroupRecorder
	runID  string
}

// procResult is what one process did.
type procResult struct {
	// startErr is set when the process could not be started.
	startErr error
	// exitCode is the exit status, -1 when the process did not exit by
	// itself.
	exitCode int
	// waitErr is exec.Cmd.Wait's error, for messages.
	waitErr error
	// interrupted reports that the context ended while the process ran and
	// it was signalled to stop; the caller tells timeout from cancellation
	// by the context.
	interrupted bool
	// pipesHeld reports that the process exited but a descendant kept its
	// output open until the grace period ran out.
	pipesHeld bool
	// killErr is an error killing what was left of the process group.
	killErr error
	// talkErr is an error writing a conversation's messages to the
	// process (it stopped reading, or exited early).
	talkErr error
	// lingered reports that a conversation was over and the process's
	// input closed, but it did not exit within grace, so it was stopped
	// (not by the context).
	lingered bool

	stdout       []byte
	stdoutN      int64
	stdoutTrunc  bool
	stderr       string
	stderrTrunc  bool
	droppedLines int
}

// runProc runs one process to completion, bounded by ctx: when ctx ends,
// the process group gets SIGTERM, and SIGKILL spec.grace later. Whatever is
// left of the group is killed when runProc returns, so no descendant
// outlives the run. The goroutines exec.Cmd starts to copy the pipes are
// waited for by Wait (at most spec.grace after the process exits).
func runProc(ctx context.Context, spec procSpec) procResult {
	res := procResult{exitCode: -1}
	if spec.live != nil {
		// After Wait: the output is all copied.
		defer spec.live.close()
	}
	cmd := exec.CommandContext(ctx, spec.argv[0], spec.argv[1:]...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	if spec.hasStdin && spec.talk == nil {
		cmd.Stdin = strings.NewReader(spec.stdin)
	}
	out := &capWriter{max: spec.maxStdout, live: spec.live}
	var (
		box   *outbox
		stdin io.WriteCloser
	)
	if spec.talk != nil {
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			res.startErr = fmt.Errorf("standard input pipe: %w", err)
			return res
		}
		box = newOutbox(spec.talk.open())
		if s, ok := spec.talk.(streamingTalk); ok {
			s.attach(box.push, spec.grace)
		}
		talk, onLine := spec.talk, spec.onLine
		out.lines = &lineSplitter{max: spec.maxLine, fn: func(b []byte) {
			if onLine != nil {
				onLine(b)
			}
			send, done := talk.line(b)
			// An error closes the outbox; the writer reports it.
			_ = box.push(send, done)
		}}
	} else if spec.onLine != nil {
		out.lines = &lineSplitter{max: spec.maxLine, fn: spec.onLine}
	}
	errTail := &tailWriter{max: spec.maxStderr}
	cmd.Stdout, cmd.Stderr = out, errTail
	setProcAttrs(cmd)
	var interrupted atomic.Bool
	cmd.Cancel = func() error {
		interrupted.Store(true)
		if c, ok := spec.talk.(cancellingTalk); ok {
			c.cancel() // at most spec.grace
		}
		return interrupt(cmd.Process)
	}
	cmd.WaitDelay = spec.grace

	if err := cmd.Start(); err != nil {
		res.startErr = err
		return res
	}
	if spec.groups != nil {
		if g, ok := groupOf(cmd.Process.Pid, spec.runID); ok {
			spec.groups.Started(g)
			// After killGroup below: nothing of the group is left.
			defer spec.groups.Ended(g)
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
				end.linger = time.AfterFunc(spec.grace, func() {
					lingered.Store(true)
					// Errors: the process is gone already, nothing to stop.
					_ = interrupt(cmd.Process)
					kill.Store(time.AfterFunc(spec.grace, func() {
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
		res.talkErr, res.lingered = end.err, lingered.Load()
	}
	res.killErr = killGroup(cmd.Process)
	if out.lines != nil {
		out.lines.flush()
		res.droppedLines = out.lines.dropped
	}
	res.waitErr = err
	res.interrupted = interrupted.Load()
	res.pipesHeld = errors.Is(err, exec.ErrWaitDelay)
	if st := cmd.ProcessState; st != nil {
		res.exitCode = st.ExitCode()
	}
	res.stdout, res.stdoutN, res.stdoutTrunc = out.buf, out.n, out.truncated()
	res.stderr, res.stderrTrunc = errTail.String(), errTail.truncated()
	return res
}

// describe says in a few words how the process ended, for a reason.
func (r procResult) describe() string {
	switch {
	case r.startErr != nil:
		return "could not start: " + r.startErr.Error()
	case r.exitCode > 0:
		return fmt.Sprintf("exit status %d", r.exitCode)
	case r.exitCode < 0 && r.waitErr != nil:
		return r.waitErr.Error() // "signal: killed"
	case r.exitCode < 0:
		return "did not exit"
	}
	return "exit status 0"
}
