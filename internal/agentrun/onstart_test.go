package agentrun

import (
	"slices"
	"strings"
	"testing"
)

// TestRunner_OnStartBeforeEachAttempt checks that Request.OnStart sees each
// attempt's command line and prompt before the agent runs, including the
// second attempt of a run whose conversation could not be continued, and
// that what it is told matches what ran.
func TestRunner_OnStartBeforeEachAttempt(t *testing.T) {
	const fresh = "33333333-2222-4333-8444-555555555555"
	const lost = "99999999-2222-4333-8444-555555555555"
	tests := []struct {
		name     string
		resume   string
		wantTrys []int
	}{
		{name: "one attempt", wantTrys: []int{1}},
		{name: "restart after a lost conversation", resume: lost, wantTrys: []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agent, state := fakePreset(t, PresetClaude)
			r := &Runner{NewSessionID: func() string { return fresh }}
			req := runRequest(t, agent, planV1)
			if tt.resume != "" {
				req = nextTurn(req, tt.resume, planV2)
			}
			var starts []Start
			req.OnStart = func(s Start) {
				// The agent has not run yet for this attempt.
				if calls := mustCalls(t, state); len(calls) != len(starts) {
					t.Errorf("OnStart(try %d) after %d agent calls; want %d", s.Try, len(calls), len(starts))
				}
				starts = append(starts, s)
			}
			res := mustRun(t, r, req)
			if res.Outcome != OutcomeOK {
				t.Fatalf("Run = %s %q; want ok", res.Outcome, res.Reason)
			}
			var trys []int
			for _, s := range starts {
				trys = append(trys, s.Try)
			}
			if !slices.Equal(trys, tt.wantTrys) {
				t.Fatalf("OnStart tries = %v; want %v", trys, tt.wantTrys)
			}
			calls := mustCalls(t, state)
			for i, s := range starts {
				if !slices.Equal(s.Argv[1:], calls[i].Args) || calls[i].Stdin != s.Prompt {
					t.Errorf("OnStart(try %d) argv %q; the agent ran with %q (same prompt: %v)", s.Try, s.Argv[1:], calls[i].Args, calls[i].Stdin == s.Prompt)
				}
				if (s.Try == 2) != (s.Restarted != nil) {
					t.Errorf("OnStart(try %d).Restarted = %+v", s.Try, s.Restarted)
				}
			}
			last := starts[len(starts)-1]
			if last.Prompt != res.Prompt || !slices.Equal(last.Argv, res.Argv) {
				t.Errorf("last OnStart = %q %q; the result reports %q %q", last.Argv, last.Prompt, res.Argv, res.Prompt)
			}
		})
	}
}

// TestRunner_OnStartDigest checks that the digest calls OnStart once, with
// no command line and the prompt a command agent would have seen.
func TestRunner_OnStartDigest(t *testing.T) {
	req := runRequest(t, Agent{}, planV1)
	var starts []Start
	req.OnStart = func(s Start) { starts = append(starts, s) }
	res := mustRun(t, &Runner{}, req)
	if res.Outcome != OutcomeOK || len(starts) != 1 {
		t.Fatalf("Run = %s, %d OnStart calls; want ok and 1", res.Outcome, len(starts))
	}
	want, err := (&Runner{}).Prompt(req)
	if err != nil {
		t.Fatal(err)
	}
	if s := starts[0]; s.Try != 1 || s.Argv != nil || s.Prompt != want || !strings.Contains(s.Prompt, "ideas/plan.md") {
		t.Errorf("OnStart(%+v); want try 1, no argv and the prompt %q", s, want)
	}
}
