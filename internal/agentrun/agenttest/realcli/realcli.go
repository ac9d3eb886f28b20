// Package realcli is the setup the real-CLI tests of each agent share: a
// Runner and an agent that run one real CLI against an API stand-in, and
// the strand's first and next turns.
package realcli

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/strand"
)

// The strand's session and its content on the first and the next turn.
const (
	Session = "11111111-2222-4333-8444-555555555555"
	PlanV1  = "# Plan\n\n- [ ] draft the outline\n"
	PlanV2  = "# Plan\n\n- [x] draft the outline\n- [ ] ask Sam\n"
)

// CLI is a Runner and agent that run one real CLI against a stand-in
// whose model calls so far calls returns (R is the stand-in's request
// record).
type CLI[R any] struct {
	Runner *agentrun.Runner
	Agent  agentrun.Agent
	calls  func() []R
}

// New returns a CLI running bin through preset (the agent's
// name too) with the complete environment env.
func New[R any](preset, bin string, env []string, calls func() []R) CLI[R] {
	return CLI[R]{
		Runner: &agentrun.Runner{
			Environ: func() []string { return env },
		},
		Agent: agentrun.Agent{
			Name:    preset,
			Preset:  preset,
			Command: []string{bin},
			Timeout: 2 * time.Minute,
		},
		calls: calls,
	}
}

// FreshSessionIDs returns a Runner.NewSessionID that counts:
// 33333333-2222-4333-8444-000000000001, then …002.
func FreshSessionIDs() func() string {
	fresh := 0
	return func() string {
		fresh++
		return fmt.Sprintf("33333333-2222-4333-8444-%012d", fresh)
	}
}

// FirstTurn is the request for a strand's first run in vault.
func (rc *CLI[R]) FirstTurn(vault string) agentrun.Request {
	return agentrun.Request{
		RunID: "run-1",
		Vault: vault,
		Event: strand.Event{
			Type:   strand.Created,
			Strand: strand.Strand{Path: "ideas/plan.md", Abs: filepath.Join(vault, "ideas", "plan.md"), Content: []byte(PlanV1)},
			Time:   time.Date(2026, 11, 21, 19, 30, 0, 0, time.UTC),
		},
		Session: Session,
		Turn:    1,
		FiredBy: agentrun.FiredByWatch,
		Agent:   rc.Agent,
		Now:     time.Date(2026, 11, 21, 19, 30, 5, 0, time.UTC),
	}
}

// NextTurn turns req into the strand's next turn, resuming handle.
func NextTurn(req agentrun.Request, handle string) agentrun.Request {
	req.Event.Type = strand.Modified
	req.Previous = req.Event.Strand.Content
	req.Event.Strand.Content = []byte(PlanV2)
	req.Resume = handle
	req.Turn++
	req.RunID = fmt.Sprintf("run-%d", req.Turn)
	req.Now = req.Now.Add(time.Minute)
	return req
}

// Attempt runs req and returns its result and the model calls the
// stand-in saw during the run, whatever the outcome.
func (rc *CLI[R]) Attempt(t *testing.T, req agentrun.Request) (agentrun.Result, []R) {
	t.Helper()
	before := len(rc.calls())
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := rc.Runner.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run(turn %d) error: %v", req.Turn, err)
	}
	return res, rc.calls()[before:]
}

// Run is Attempt for a run that must succeed.
func (rc *CLI[R]) Run(t *testing.T, req agentrun.Request) (agentrun.Result, []R) {
	t.Helper()
	res, calls := rc.Attempt(t, req)
	if res.Outcome != agentrun.OutcomeOK {
		t.Fatalf("Run(turn %d) = %s %q; want ok\nargv %q\nstdout %s\nstderr %s",
			req.Turn, res.Outcome, res.Reason, res.Argv, res.Stdout, res.Stderr)
	}
	return res, calls
}

// MustOneCall returns the only model call of a run (for Gemini, the only
// call of the conversation: its router's calls are not counted).
func MustOneCall[R any](t *testing.T, turn int, calls []R) R {
	t.Helper()
	if len(calls) != 1 {
		t.Fatalf("turn %d made %d model calls; want 1", turn, len(calls))
	}
	return calls[0]
}
