package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/stretchr/testify/require"
)

// TestRuns_Cost: knotd runs --cost totals what the CLIs reported: a run
// of a Claude fake (which reports its cost) and one of the digest (which
// reports none) give a total priced for one run, and tokens only for the
// other, per agent, folder, note and day.
func TestRuns_Cost(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: claude\nagents:\n  claude:\n    preset: claude\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Claude, fakeagent.EnvState, state))
	if code, _, stderr := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("adopting: exit %d\n%s", code, stderr)
	}
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	writeFile(t, filepath.Join(v, "notes", "b.md"), "---\nknot_agent: digest\n---\n# B\n")
	if code, _, stderr := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("knotd --once: exit %d\n%s", code, stderr)
	}

	code, out, stderr := knotd(t, "runs", "--cost", "--json", v)
	require.Equal(t, exitOK, code, stderr)
	var r costReport
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	claude := transcript.Ledger{Runs: 1, Priced: 1, Metered: 1, Usage: transcript.Usage{InputTokens: 10, OutputTokens: 8, CostUSD: 0.0002}}
	require.Equal(t, []transcript.LedgerRow{{Key: "claude", Ledger: claude}, {Key: "digest", Ledger: transcript.Ledger{Runs: 1}}}, r.ByAgent)
	require.Equal(t, []transcript.LedgerRow{{Key: "(top level)", Ledger: claude}, {Key: "notes/", Ledger: transcript.Ledger{Runs: 1}}}, r.ByFolder)
	require.Equal(t, transcript.Ledger{Runs: 2, Priced: 1, Metered: 1, Usage: claude.Usage}, r.Total)
	require.Len(t, r.ByDay, 1)

	code, out, stderr = knotd(t, "runs", "--cost", v, "--strand", "a.md")
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "$0.0002")
	require.NotContains(t, out, "unpriced")
	code, out, _ = knotd(t, "runs", "--cost", v)
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "$0.0002 (+1 unpriced)")
	require.Contains(t, out, "TOTAL")

	code, _, stderr = knotd(t, "runs", "--cost", "--limit", "3", v)
	require.Equal(t, exitUsage, code, stderr)

	// knotd status shows the day's.
	code, out, stderr = knotd(t, "status", "--json", v)
	require.Equal(t, exitOK, code, stderr)
	var st struct {
		Today control.Totals `json:"today"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Equal(t, control.Totals{Runs: 2, OK: 2, InputTokens: 10, OutputTokens: 8, CostUSD: 0.0002, Priced: 1, Metered: 1}, st.Today)
	code, out, stderr = knotd(t, "status", v)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "today (UTC): 2 runs, 2 ok, 0 failed; 10 tokens in, 8 out (reported by the CLIs of 1 run); $0.0002 reported by the CLIs of 1 run (knotd runs --cost says more)\n")
}

// TestRuns_UnknownTokens: runs whose CLI reports no tokens (the digest)
// have tokens not known, never "0 tokens", in knotd status and knotd runs
// --cost; and one run is "1 run".
func TestRuns_UnknownTokens(t *testing.T) {
	v, _ := setup(t)
	if code, _, stderr := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("adopting: exit %d\n%s", code, stderr)
	}
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	if code, _, stderr := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("knotd --once: exit %d\n%s", code, stderr)
	}
	code, out, stderr := knotd(t, "status", v)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "today (UTC): 1 run, 1 ok, 0 failed; tokens not reported (knotd runs --cost says more)\n")
	code, out, stderr = knotd(t, "runs", "--cost", v)
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `(?m)^TOTAL +1 +- +- +- +- +-$`, out)
}

// TestOnce_BudgetDefersAndRunByHand: with the day's budget spent, a pass
// runs nothing more, says why once, and records nothing (the change is
// not lost); knotd run answers the note anyway.
func TestOnce_BudgetDefersAndRunByHand(t *testing.T) {
	v, c := setup(t)
	state := t.TempDir()
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: claude\nconcurrency: 1\nbudget: {day_usd: 0.0002}\nagents:\n  claude:\n    preset: claude\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Claude, fakeagent.EnvState, state))
	if code, _, stderr := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("adopting: exit %d\n%s", code, stderr)
	}
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	writeFile(t, filepath.Join(v, "b.md"), "# B\n")
	code, out, stderr := knotd(t, "--once", "--json", v)
	require.Equal(t, exitOK, code, stderr)
	var sum struct{ Ran int }
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	require.Equal(t, 1, sum.Ran, "runs within a budget of one run's cost")
	require.Equal(t, 1, strings.Count(stderr, "a change waits for the budget"), stderr)

	code, _, stderr = knotd(t, "--once", v)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stderr, "waits for the budget", "the change is still there, still waiting")

	code, out, stderr = knotd(t, "run", filepath.Join(v, "b.md"))
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "Created b.md: ok")
	for _, n := range []string{"a", "b"} {
		require.Len(t, tieoffSections(t, filepath.Join(v, n+".tieoff.md")), 1, n+".md")
	}
}

// TestOnce_SaysWhatWaits: the --once summary (text and JSON) and the dry
// run name the changed notes that did not run because they are paused or
// wait for the day's budget, so that the user sees why.
func TestOnce_SaysWhatWaits(t *testing.T) {
	v, c := setup(t)
	writeFile(t, filepath.Join(c, "config.yaml"), "concurrency: 1\nbudget: {day_runs: 1}\n")
	writeFile(t, filepath.Join(v, "c.md"), "# C\n")
	if code, _, stderr := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("adopting: exit %d\n%s", code, stderr)
	}
	code, _, stderr := knotd(t, "pause", filepath.Join(v, "c.md"))
	require.Equal(t, exitOK, code, stderr)
	writeFile(t, filepath.Join(v, "c.md"), "# C\n\nchanged while paused\n")
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	writeFile(t, filepath.Join(v, "b.md"), "# B\n")

	code, out, stderr := knotd(t, "--once", "--json", v)
	require.Equal(t, exitOK, code, stderr)
	var sum struct {
		Ran      int
		Paused   []struct{ Note, Why string }
		Deferred []struct{ Note, Why string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &sum), out)
	require.Equal(t, 1, sum.Ran, out)
	require.Len(t, sum.Paused, 1, out)
	require.Equal(t, "c.md", sum.Paused[0].Note)
	require.Len(t, sum.Deferred, 1, out)
	waiting := sum.Deferred[0].Note
	require.Contains(t, []string{"a.md", "b.md"}, waiting)
	require.Contains(t, sum.Deferred[0].Why, "budget of 1 runs a day is spent")

	code, out, stderr = knotd(t, "--once", v)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "paused   -        c.md  (knotd resume c.md answers its change)\n")
	require.Contains(t, out, "waiting  -        "+waiting+"  (")
	require.Contains(t, out, ", not run (paused): 1, not run (waiting for the day's budget): 1, in ")

	code, out, stderr = knotd(t, "--once", "--dry-run", v)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, out, "==> c.md: not run now: the note is paused (knotd resume answers its changes)\n")
	require.Contains(t, out, "==> "+waiting+": not run now: waits for the budget: ")
	require.Contains(t, out, "not run, paused: 1 (c.md); knotd resume answers their changes\n")
	require.Contains(t, out, "not run, waiting for the day's budget: 1 ("+waiting+"); they run when it allows, or now with knotd run\n")
	require.NotContains(t, out, "## Event Context", "the dry run shows a prompt for a change that would not run")
}
