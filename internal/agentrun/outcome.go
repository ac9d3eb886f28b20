package agentrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// maxReason bounds the detail quoted in a Result's Reason.
const maxReason = 300

// record copies what an attempt's process did into the result.
func (o *attemptOutcome) record(res *Result) {
	pr := o.proc
	res.ExitCode = pr.ExitCode
	res.Stdout, res.StdoutBytes, res.StdoutTruncated = pr.Stdout, pr.StdoutN, pr.StdoutTrunc
	res.Stderr, res.StderrTruncated = pr.Stderr, pr.StderrTrunc
	res.Notes = append(res.Notes, o.parsed.notes...)
	res.Message = o.parsed.message
	if pr.DroppedLines > 0 && res.Message != nil {
		res.Message.Truncated = true
	}
	if pr.PipesHeld {
		res.Notes = append(res.Notes, "a process the agent left behind kept its output open after it exited; it was killed after the grace period")
	}
	if pr.Lingered {
		res.Notes = append(res.Notes, "the agent did not exit within the grace period after its conversation ended; it was stopped")
	}
	if pr.KillErr != nil {
		res.Notes = append(res.Notes, "could not kill the agent's process group: "+pr.KillErr.Error())
	}
	if pr.DroppedLines > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("skipped %d output lines longer than the line limit", pr.DroppedLines))
	}
}

// classify fills res from an attempt that was not interrupted.
func classify(o attemptOutcome, res *Result) {
	o.record(res)
	p := o.parsed
	res.Reply, res.Resume, res.Usage = cleanReply(p.reply), p.handle, p.usage
	res.ContextTokens, res.ContextWindow = p.context, p.window
	res.Questions = p.held
	prog := res.Agent
	if len(res.Argv) > 0 {
		prog = res.Argv[0]
	}
	fail := func(reason string) { res.Outcome, res.Reason = OutcomeFailed, reason }
	// A line the notes explain (Gemini CLI's untrusted folder) is not a
	// failure's cause: the reason quotes the first other one.
	stderr := unnotedStderr(o.proc.Stderr, p.noted)
	switch {
	case o.runErr != nil:
		fail("cannot run " + res.Agent + ": " + o.runErr.Error())
		res.NotStarted = o.runErr.Error()
	case o.proc.StartErr != nil:
		fail("could not start " + prog + ": " + o.proc.StartErr.Error())
		res.NotStarted = o.proc.StartErr.Error()
	case o.proc.ExitCode != 0 && !o.proc.Lingered:
		fail(o.proc.Describe() + detail(p.agentErr, stderr, o.parseErr))
	case p.agentErr != "":
		fail(res.Agent + " reported an error: " + p.agentErr)
	case o.parseErr != nil:
		reason := "could not read the reply: " + o.parseErr.Error()
		if errors.Is(o.parseErr, errNoOutput) {
			reason = "no output" + detail("", stderr, nil)
		}
		if o.proc.StdoutTrunc {
			reason += fmt.Sprintf(" (the output was cut at %d of %d bytes)", len(o.proc.Stdout), o.proc.StdoutN)
		}
		fail(reason)
	case res.Reply == "" && len(p.held) > 0:
		// The turn ended holding calls for the user's answer: a
		// question, not a failure.
		res.Outcome = OutcomeOK
	case res.Reply == "":
		fail("empty reply" + detail("", stderr, nil))
	default:
		res.Outcome = OutcomeOK
	}
}

// unnotedStderr is stderr without the lines noted tells (all of it when
// noted is nil).
func unnotedStderr(stderr string, noted func(line string) bool) string {
	if noted == nil {
		return stderr
	}
	var b strings.Builder
	for l := range strings.Lines(stderr) {
		if !noted(l) {
			b.WriteString(l)
		}
	}
	return b.String()
}

// detail is the ": …" part of a failure reason: what the agent reported,
// else the first line of its standard error, else the parse error.
func detail(agentErr, stderr string, parseErr error) string {
	switch {
	case agentErr != "":
		return ": " + agentErr
	case firstLine(stderr, maxReason) != "":
		return ": " + firstLine(stderr, maxReason)
	case parseErr != nil && !errors.Is(parseErr, errNoOutput):
		return ": " + parseErr.Error()
	}
	return ""
}

// recordInterrupted fills res for an attempt stopped because runCtx ended:
// a timeout when the run's own deadline passed, a cancellation when the
// caller's ctx ended.
func recordInterrupted(ctx, runCtx context.Context, timeout time.Duration, o attemptOutcome, res *Result) {
	o.record(res)
	res.Reply, res.Resume, res.Usage = cleanReply(o.parsed.reply), o.parsed.handle, o.parsed.usage
	if errors.Is(context.Cause(runCtx), errTimedOut) {
		res.Outcome = OutcomeTimeout
		res.Reason = fmt.Sprintf("timed out after %v", timeout)
	} else {
		res.Outcome = OutcomeCanceled
		res.Reason = "canceled: " + strings.TrimPrefix(context.Cause(ctx).Error(), "context ")
	}
	if l := firstLine(unnotedStderr(o.proc.Stderr, o.parsed.noted), maxReason); l != "" {
		res.Reason += " (stderr: " + l + ")"
	}
}
