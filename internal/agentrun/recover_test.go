package agentrun

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// recorded reads one recorded case of a real CLI: its exit status and
// what it printed (<dir>/<name>.exit, .stdout or .jsonl or .json,
// .stderr; absent files are empty output).
func recorded(t *testing.T, dir, name string) (exit int, stdout, stderr string) {
	t.Helper()
	read := func(ext string) string {
		b, err := os.ReadFile(filepath.Join(dir, name+ext))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(b)
	}
	s := strings.TrimSpace(read(".exit"))
	exit, err := strconv.Atoi(strings.TrimPrefix(s, "exit="))
	if err != nil {
		t.Fatalf("%s/%s.exit: %q", dir, name, s)
	}
	return exit, read(".stdout") + read(".jsonl") + read(".json"), read(".stderr")
}

// talk feeds what a conversing agent printed to a conversation of d for
// attempt a, line by line as proc.Run does, and returns what it parsed and
// every message it sent, in order.
func talk(d talker, a *attempt, stdout, stderr string) (parsed, []string) {
	c := d.converse(a)
	var sent []string
	for _, m := range c.open() {
		sent = append(sent, string(m))
	}
	for line := range strings.Lines(stdout) {
		send, _ := c.line([]byte(strings.TrimSuffix(line, "\n")))
		for _, m := range send {
			sent = append(sent, string(m))
		}
	}
	p, err := c.finish([]byte(stdout), false, stderr)
	if err != nil {
		sent = append(sent, "finish: "+err.Error())
	}
	return p, sent
}

// parseOutput parses what an agent printed as the runner does: line by
// line for a line parser, then whole.
func parseOutput(d driver, stdout, stderr string) (parsed, error) {
	p := d.parser()
	if lp, ok := p.(lineParser); ok {
		for line := range strings.Lines(stdout) {
			lp.line([]byte(strings.TrimSuffix(line, "\n")))
		}
	}
	return p.finish([]byte(stdout), false, stderr)
}

// TestSessionLost_Recorded: each resuming preset tells, from what its real
// CLI printed, a conversation it cannot continue or create (then the run
// starts a fresh one) from any other failure (then it does not).
func TestSessionLost_Recorded(t *testing.T) {
	for _, tc := range []struct {
		dir, name string
		d         driver
		want      string // the reason's start; "" for not lost
	}{
		{claudeRecorded, "json-resume-missing", claudeDriver(), "No conversation found"},
		{claudeRecorded, "json-session-in-use", claudeDriver(), "Error: Session ID"},
		{claudeRecorded, "json-new-session", claudeDriver(), ""},
		{codexRecorded, "exec-resume-unknown", codexDriver(), "no rollout found for thread id 11111111-2222-3333-4444-555555555555"},
		{codexRecorded, "exec-resume-after-sessions-wiped", codexDriver(), "no rollout found for thread id"},
		{codexRecorded, "exec-http-401", codexDriver(), ""},
		{codexRecorded, "exec-no-api-key", codexDriver(), ""},
		{codexRecorded, "exec-resume", codexDriver(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exit, stdout, stderr := recorded(t, tc.dir, tc.name)
			parsed, _ := parseOutput(tc.d, stdout, stderr)
			reason, lost := tc.d.(sessionRecoverer).sessionLost(exit, parsed, stderr)
			if lost != (tc.want != "") || !strings.HasPrefix(reason, tc.want) {
				t.Errorf("sessionLost = %q, %v; want %q", reason, lost, tc.want)
			}
		})
	}
}

// TestRecorded_Replies: the parsers read the real CLIs' recorded replies.
func TestRecorded_Replies(t *testing.T) {
	for _, tc := range []struct {
		dir, name     string
		d             driver
		reply, handle string
	}{
		{codexRecorded, "exec-new", codexDriver(), "MOCK REPLY (user messages seen: 1)", "01a2086a-7aad-7b13-95ec-b0043e7b6444"},
		{codexRecorded, "exec-resume", codexDriver(), "MOCK REPLY (user messages seen: 2)", "01a2086a-7aad-7b13-95ec-b0043e7b6444"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exit, stdout, stderr := recorded(t, tc.dir, tc.name)
			got, err := parseOutput(tc.d, stdout, stderr)
			if err != nil || exit != 0 || got.reply != tc.reply || got.handle != tc.handle || got.agentErr != "" {
				t.Errorf("exit %d, parsed %+v, %v; want reply %q, handle %q", exit, got, err, tc.reply, tc.handle)
			}
		})
	}
}

// TestPresets_RecoverALostConversation: a conversation the CLI no longer
// has (or never had: another agent's handle) is started afresh, once, and
// the prompt says so; no note is stuck on it.
func TestPresets_RecoverALostConversation(t *testing.T) {
	const foreign = "11111111-2222-4333-8444-555555555555" // a handle this CLI never gave
	for _, preset := range []string{PresetClaude, PresetCodex, PresetGemini} {
		t.Run(preset, func(t *testing.T) {
			agent, state := fakePreset(t, preset)
			r := &Runner{}
			req := nextTurn(runRequest(t, agent, planV1), foreign, planV2)
			res := mustRun(t, r, req)
			if res.Outcome != OutcomeOK || res.Restarted == nil || res.Restarted.Handle != foreign {
				t.Fatalf("Run = %s %q, restarted %+v; want ok, restarted from %s", res.Outcome, res.Reason, res.Restarted, foreign)
			}
			if res.Resume == "" || res.Resume == foreign || res.Reply != "FAKE REPLY (user messages seen: 1)" {
				t.Errorf("resume %q, reply %q; want a fresh conversation", res.Resume, res.Reply)
			}
			if !strings.Contains(res.Prompt, "conversation "+foreign+" could not be continued") {
				t.Errorf("the prompt does not say the conversation was restarted:\n%s", preview(res.Prompt, 400))
			}
			if n := len(mustCalls(t, state)); n != 2 {
				t.Errorf("%d calls; want 2 (the refusal, and the fresh start)", n)
			}
			// The next turn continues the fresh conversation.
			next := mustRun(t, r, nextTurn(req, res.Resume, planV1))
			if next.Outcome != OutcomeOK || next.Restarted != nil || next.Reply != "FAKE REPLY (user messages seen: 2)" {
				t.Errorf("next turn = %s %q, restarted %+v, reply %q", next.Outcome, next.Reason, next.Restarted, next.Reply)
			}
		})
	}
}

// TestRecorded_UsagePerTurn: the real CLIs' usage of a resumed
// conversation, turned into each turn's own from the totals of the turn
// before: Codex CLI reports running token totals (100, 300, 600 input
// tokens over three turns of 100, 200, 300), Claude Code a running cost.
func TestRecorded_UsagePerTurn(t *testing.T) {
	usage := func(dir, name string, d driver) Usage {
		t.Helper()
		_, stdout, stderr := recorded(t, dir, name)
		got, err := parseOutput(d, stdout, stderr)
		if err != nil || got.usage == nil {
			t.Fatalf("%s: usage %+v, %v", filepath.Join(dir, name), got.usage, err)
		}
		return *got.usage
	}
	for _, tc := range []struct {
		dir, before, now string
		d                driver
		want             Usage
	}{
		{codexRecorded, "exec-new", "exec-resume", codexDriver(), Usage{InputTokens: 200, OutputTokens: 9}},
		{codexRecorded, "exec-resume", "exec-resume-2", codexDriver(), Usage{InputTokens: 300, OutputTokens: 9}},
		{claudeRecorded, "json-new-session", "json-resume", claudeDriver(), Usage{InputTokens: 10, OutputTokens: 8, CostUSD: 0.0002}},
	} {
		t.Run(tc.now, func(t *testing.T) {
			before, total := usage(tc.dir, tc.before, tc.d), usage(tc.dir, tc.now, tc.d)
			res := Result{Agent: "a", Usage: &total}
			perTurn(tc.d, &attempt{resume: "thread"}, &before, &res)
			got := *res.Usage
			if got.CostUSD-tc.want.CostUSD > 1e-12 || tc.want.CostUSD-got.CostUSD > 1e-12 {
				t.Errorf("cost %v; want %v", got.CostUSD, tc.want.CostUSD)
			}
			got.CostUSD, tc.want.CostUSD = 0, 0
			if got != tc.want || res.Totals == nil || *res.Totals != total {
				t.Errorf("usage %+v, totals %+v; want %+v, and the totals %+v kept", got, res.Totals, tc.want, total)
			}
			// Without the totals before, the run says what it recorded.
			res = Result{Agent: "a", Usage: &total}
			perTurn(tc.d, &attempt{resume: "thread"}, nil, &res)
			if *res.Usage != total || len(res.Notes) != 1 {
				t.Errorf("without totals before: usage %+v, notes %q", res.Usage, res.Notes)
			}
		})
	}
}

// TestRecorded_CodexContextPerTurn: Codex CLI reports no context size, so
// a turn's is its own input tokens, from the running totals turned into
// the turn's use (100, 200, 300 over the recorded three turns), cached
// ones not added again (they are a part of input_tokens); a resumed turn
// whose totals before are unknown has none (the whole thread's total is
// not its context). The preset's default max_context is 200,000.
func TestRecorded_CodexContextPerTurn(t *testing.T) {
	usage := func(dir, name string) Usage {
		t.Helper()
		var stdout, stderr string
		if dir == codexWritten {
			stdout = string(readTestdata(t, filepath.Join(dir, name+".jsonl")))
		} else {
			_, stdout, stderr = recorded(t, dir, name)
		}
		got, err := parseOutput(codexDriver(), stdout, stderr)
		if err != nil || got.usage == nil {
			t.Fatalf("%s: usage %+v, %v", filepath.Join(dir, name), got.usage, err)
		}
		return *got.usage
	}
	for _, tc := range []struct {
		dir, before, now string
		want             int64
	}{
		{codexRecorded, "", "exec-new", 100},
		{codexRecorded, "exec-new", "exec-resume", 200},
		{codexRecorded, "exec-resume", "exec-resume-2", 300},
		{codexWritten, "", "exec-resume", 25010}, // 24704 of them cached
	} {
		t.Run(tc.dir+"/"+tc.now, func(t *testing.T) {
			total := usage(tc.dir, tc.now)
			res := Result{Agent: "codex", Usage: &total}
			a := attempt{}
			var before *Usage
			if tc.before != "" {
				b := usage(tc.dir, tc.before)
				a.resume, before = "thread", &b
			}
			perTurn(codexDriver(), &a, before, &res)
			if res.ContextTokens != tc.want {
				t.Errorf("context %d tokens; want %d (the turn's input, usage %+v)", res.ContextTokens, tc.want, *res.Usage)
			}
			if tc.before == "" {
				return
			}
			res = Result{Agent: "codex", Usage: &total}
			perTurn(codexDriver(), &attempt{resume: "thread"}, nil, &res)
			if res.ContextTokens != 0 {
				t.Errorf("without the totals before: context %d tokens; want none, not the thread's total", res.ContextTokens)
			}
		})
	}
	a := Agent{Preset: PresetCodex}
	if got := a.contextLimit(codexDriver(), 0); got != 200_000 {
		t.Errorf("codex's default max_context = %d; want 200000", got)
	}
}
