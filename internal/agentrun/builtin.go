package agentrun

import (
	"context"

	"github.com/knotd/knotd/internal/digest"
	"github.com/knotd/knotd/internal/strand"
)

// runDigest runs the built-in digest agent in-process: digest.Of reports
// what the event means for the note. It needs no prompt, network or
// process, has no session to resume, and takes no measurable time, so the
// run's timeout does not apply; a context that has already ended still
// cancels it.
func runDigest(ctx context.Context, req *Request, res *Result) {
	if ctx.Err() != nil {
		res.Outcome, res.Reason = OutcomeCanceled, "canceled before the digest ran"
		return
	}
	current := req.Event.Strand.Content
	if req.Event.Type == strand.Deleted {
		current = nil
	}
	res.Reply = cleanReply(digest.Of(req.Event.Type, req.Event.Strand.Path, req.Previous, current))
	if res.Reply == "" {
		res.Outcome, res.Reason = OutcomeFailed, "the digest is empty"
		return
	}
	res.Outcome = OutcomeOK
}
