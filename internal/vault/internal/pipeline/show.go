package pipeline

import (
	"fmt"
	"io"

	"github.com/knotd/knotd/internal/agentrun"
)

// Show prints what processing rel would do (--dry-run): its event and
// full prompt, built by prompt, or why it would not run; it returns the
// reason a change would wait or be recorded without a run, if any. It
// takes the change through plan, which writes nothing in a dry run.
func (pl *Pipeline) Show(out io.Writer, rel string, job Job, prompt func(agentrun.Request) (string, error)) string {
	wk, skip, err := pl.plan(rel, job, false)
	defer pl.sess.sessions.release(rel)
	switch {
	case err != nil:
		fmt.Fprintf(out, "==> %s: cannot prepare: %v\n\n", rel, err)
		return ""
	case wk == nil && skip != "" && skip != emptySkip:
		// A paused strand, or one over the day's budget: its change
		// waits, unrecorded.
		fmt.Fprintf(out, "==> %s: not run now: %s\n\n", rel, skip)
		return skip
	case wk == nil:
		return skip
	case skip != "":
		fmt.Fprintf(out, "==> %s %s: recorded without a run (%s)\n\n", wk.event, rel, skip)
		return skip
	case wk.failure != "":
		fmt.Fprintf(out, "==> %s %s: would fail without a run:\n%s\n\n", wk.event, rel, wk.failure)
		return ""
	}
	req, err := pl.request(wk, job, "dry-run", pl.h.Now().UTC())
	if err == nil {
		var p string
		if p, err = prompt(req); err == nil {
			fmt.Fprintf(out, "==> %s %s (agent %s)\n%s\n\n", wk.event, rel, wk.agentName, p)
			return ""
		}
	}
	fmt.Fprintf(out, "==> %s %s (agent %s): %v\n\n", wk.event, rel, wk.agentName, err)
	return ""
}
