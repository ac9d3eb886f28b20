package agentrun_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/strand"
)

// The setup the real-CLI tests (claude_, codex_, gemini_ and
// permissions_integration_test.go) share.

const (
	realSession = "11111111-2222-4333-8444-555555555555"
	realPlanV1  = "# Plan\n\n- [ ] draft the outline\n"
	realPlanV2  = "# Plan\n\n- [x] draft the outline\n- [ ] ask Sam\n"
)

// realCLI is a Runner and agent that run one real CLI against a stand-in
// whose model calls so far calls returns (R is the stand-in's request
// record).
type realCLI[R any] struct {
	runner *agentrun.Runner
	agent  agentrun.Agent
	calls  func() []R
}

// newRealCLI returns a realCLI running bin through preset (the agent's
// name too) with the complete environment env.
func newRealCLI[R any](preset, bin string, env []string, calls func() []R) realCLI[R] {
	return realCLI[R]{
		runner: &agentrun.Runner{
			Environ: func() []string { return env },
		},
		agent: agentrun.Agent{
			Name:    preset,
			Preset:  preset,
			Command: []string{bin},
			Timeout: 2 * time.Minute,
		},
		calls: calls,
	}
}

// freshSessionIDs returns a Runner.NewSessionID that counts:
// 33333333-2222-4333-8444-000000000001, then …002.
func freshSessionIDs() func() string {
	fresh := 0
	return func() string {
		fresh++
		return fmt.Sprintf("33333333-2222-4333-8444-%012d", fresh)
	}
}

// firstTurn is the request for a strand's first run in vault.
func (rc *realCLI[R]) firstTurn(vault string) agentrun.Request {
	return agentrun.Request{
		RunID: "run-1",
		Vault: vault,
		Event: strand.Event{
			Type:   strand.Created,
			Strand: strand.Strand{Path: "ideas/plan.md", Abs: filepath.Join(vault, "ideas", "plan.md"), Content: []byte(realPlanV1)},
			Time:   time.Date(2026, 11, 21, 19, 30, 0, 0, time.UTC),
		},
		Session: realSession,
		Turn:    1,
		FiredBy: agentrun.FiredByWatch,
		Agent:   rc.agent,
		Now:     time.Date(2026, 11, 21, 19, 30, 5, 0, time.UTC),
	}
}

// realNextTurn turns req into the strand's next turn, resuming handle.
func realNextTurn(req agentrun.Request, handle string) agentrun.Request {
	req.Event.Type = strand.Modified
	req.Previous = req.Event.Strand.Content
	req.Event.Strand.Content = []byte(realPlanV2)
	req.Resume = handle
	req.Turn++
	req.RunID = fmt.Sprintf("run-%d", req.Turn)
	req.Now = req.Now.Add(time.Minute)
	return req
}

// attempt runs req and returns its result and the model calls the
// stand-in saw during the run, whatever the outcome.
func (rc *realCLI[R]) attempt(t *testing.T, req agentrun.Request) (agentrun.Result, []R) {
	t.Helper()
	before := len(rc.calls())
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	res, err := rc.runner.Run(ctx, req)
	if err != nil {
		t.Fatalf("Run(turn %d) error: %v", req.Turn, err)
	}
	return res, rc.calls()[before:]
}

// run is attempt for a run that must succeed.
func (rc *realCLI[R]) run(t *testing.T, req agentrun.Request) (agentrun.Result, []R) {
	t.Helper()
	res, calls := rc.attempt(t, req)
	if res.Outcome != agentrun.OutcomeOK {
		t.Fatalf("Run(turn %d) = %s %q; want ok\nargv %q\nstdout %s\nstderr %s",
			req.Turn, res.Outcome, res.Reason, res.Argv, res.Stdout, res.Stderr)
	}
	return res, calls
}

// mustOneCall returns the only model call of a run (for Gemini, the only
// call of the conversation: its router's calls are not counted).
func mustOneCall[R any](t *testing.T, turn int, calls []R) R {
	t.Helper()
	if len(calls) != 1 {
		t.Fatalf("turn %d made %d model calls; want 1", turn, len(calls))
	}
	return calls[0]
}
