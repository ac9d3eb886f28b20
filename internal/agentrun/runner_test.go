package agentrun

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/textbound"
)

// fakeCommand returns a generic command agent that runs a fake behaviour
// with the given arguments, and the fake's state directory.
func fakeCommand(t *testing.T, behaviour string, args ...string) (Agent, string) {
	t.Helper()
	state := t.TempDir()
	return Agent{
		Name:    behaviour,
		Command: append([]string{fakeagent.Program(t)}, args...),
		Env:     fakeagent.Env(behaviour, state),
	}, state
}

// fakePreset returns a preset agent whose program is the matching fake CLI.
func fakePreset(t *testing.T, preset string) (Agent, string) {
	t.Helper()
	state := t.TempDir()
	a := Agent{Preset: preset, Command: []string{fakeagent.Program(t)}, Env: fakeagent.Env(preset, state)}
	if preset == PresetOllama {
		a.Model = "llama3.2"
	}
	return a, state
}

// runRequest returns a request for a Created event in a fresh vault.
func runRequest(t *testing.T, agent Agent, content string) Request {
	t.Helper()
	r := promptRequest(strand.Created, content)
	r.Vault = t.TempDir()
	r.StateDir = t.TempDir()
	r.Event.Strand.Abs = filepath.Join(r.Vault, "ideas", "plan.md")
	r.Agent = agent
	r.Now = testNow
	return *r
}

func mustRun(t *testing.T, r *Runner, req Request) Result {
	t.Helper()
	res, err := r.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func mustCalls(t *testing.T, state string) []fakeagent.Call {
	t.Helper()
	calls, err := fakeagent.Calls(state)
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

func sameDir(t *testing.T, a, b string) bool {
	t.Helper()
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

func TestRunner_RunsCommandWithPromptOnStdin(t *testing.T) {
	agent, state := fakeCommand(t, fakeagent.Echo)
	req := runRequest(t, agent, planV1)
	res := mustRun(t, &Runner{}, req)
	if res.Outcome != OutcomeOK || res.Reply != "ECHO: ## Event Context" || res.ExitCode != 0 {
		t.Fatalf("Run(echo) = %+v; want ok with the first line of the prompt", res)
	}
	calls := mustCalls(t, state)
	if len(calls) != 1 {
		t.Fatalf("%d calls; want 1", len(calls))
	}
	c := calls[0]
	if c.Stdin != res.Prompt || !strings.HasSuffix(res.Prompt, planV1) {
		t.Errorf("stdin = %q; want the prompt %q", c.Stdin, res.Prompt)
	}
	if len(c.Args) != 0 {
		t.Errorf("args = %q; want none", c.Args)
	}
	if !sameDir(t, c.Dir, req.Vault) {
		t.Errorf("working directory = %s; want the vault %s", c.Dir, req.Vault)
	}
	want := map[string]string{EnvVault: req.Vault, EnvStrand: "ideas/plan.md", EnvEvent: "Created", EnvSession: testSession, EnvRunID: req.RunID}
	for k, v := range want {
		if c.Env[k] != v {
			t.Errorf("%s = %q; want %q", k, c.Env[k], v)
		}
	}
	if res.Duration <= 0 || res.Agent != "echo" || res.Preset != "" || !slices.Equal(res.Argv, agent.Command) {
		t.Errorf("result metadata = duration %v agent %q preset %q argv %q", res.Duration, res.Agent, res.Preset, res.Argv)
	}
}

func TestRunner_Environment(t *testing.T) {
	agent, state := fakeCommand(t, fakeagent.Echo)
	agent.Env["KNOTD_TEST_ADDED"] = "added"
	agent.Env["KNOTD_TEST_REPLACED"] = "new"
	agent.EnvRemove = []string{"KNOTD_TEST_REMOVED"}
	r := &Runner{Environ: func() []string {
		return []string{"KNOTD_TEST_KEPT=kept", "KNOTD_TEST_REMOVED=secret", "KNOTD_TEST_REPLACED=old", "KNOT_STRAND=forged.md", "KNOT_RUN_ID=forged"}
	}}
	req := runRequest(t, agent, planV1)
	if res := mustRun(t, r, req); res.Outcome != OutcomeOK {
		t.Fatalf("Run = %+v", res)
	}
	env := mustCalls(t, state)[0].Env
	want := map[string]string{
		"KNOTD_TEST_KEPT": "kept", "KNOTD_TEST_ADDED": "added", "KNOTD_TEST_REPLACED": "new",
		EnvStrand: "ideas/plan.md", EnvRunID: req.RunID,
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q; want %q", k, env[k], v)
		}
	}
	if v, ok := env["KNOTD_TEST_REMOVED"]; ok {
		t.Errorf("KNOTD_TEST_REMOVED = %q reached the agent; want it removed", v)
	}
}

func TestRunner_ArgModeKeepsTheNoteOneArgument(t *testing.T) {
	const note = "- item one\n--help\n- item two\n"
	agent, state := fakeCommand(t, fakeagent.Echo, "--quiet", "{prompt}")
	agent.Prompt = PromptArg
	res := mustRun(t, &Runner{}, runRequest(t, agent, note))
	if res.Outcome != OutcomeOK {
		t.Fatalf("Run = %+v", res)
	}
	c := mustCalls(t, state)[0]
	if len(c.Args) != 2 || c.Args[0] != "--quiet" || c.Args[1] != res.Prompt || !strings.HasSuffix(c.Args[1], note) {
		t.Errorf("args = %q; want [--quiet <the prompt as one element>]", c.Args)
	}
	if c.Stdin != "" {
		t.Errorf("stdin = %q; want the null device in arg mode", c.Stdin)
	}
}

func TestRunner_RefusesPromptThatWouldBeAFlag(t *testing.T) {
	tests := []struct {
		name    string
		command []string
		instr   string
		path    string
		ok      bool
	}{
		{name: "instructions start with a dash", instr: "-rf everything\n"},
		{name: "appended prompt starts with a dash", command: []string{}, instr: "--help"},
		{name: "after --", command: []string{"--", "{prompt}"}, instr: "-rf everything\n", ok: true},
		{name: "strand path starts with a dash", command: []string{"{strand}"}, path: "-rf.md"},
		{name: "strand path inside an element", command: []string{"--file={strand}"}, path: "-rf.md", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.command
			if cmd == nil {
				cmd = []string{"{prompt}"}
			}
			agent, state := fakeCommand(t, fakeagent.Echo, cmd...)
			agent.Prompt, agent.Instructions = PromptArg, tt.instr
			req := runRequest(t, agent, "note\n")
			if tt.path != "" {
				req.Event.Strand.Path = tt.path
			}
			res := mustRun(t, &Runner{}, req)
			calls := mustCalls(t, state)
			if tt.ok {
				if res.Outcome != OutcomeOK || len(calls) != 1 {
					t.Fatalf("Run = %+v with %d calls; want ok", res, len(calls))
				}
				return
			}
			if res.Outcome != OutcomeFailed || !strings.Contains(res.Reason, "read it as a flag") {
				t.Errorf("Run = %s %q; want failed saying the value would be read as a flag", res.Outcome, res.Reason)
			}
			if len(calls) != 0 {
				t.Errorf("the agent ran %d times with a flag-like argument: %q", len(calls), calls[0].Args)
			}
		})
	}
}

func TestRunner_FileMode(t *testing.T) {
	agent, state := fakeCommand(t, fakeagent.File, "--input")
	agent.Prompt = PromptFile
	res := mustRun(t, &Runner{TempDir: t.TempDir()}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeOK {
		t.Fatalf("Run = %+v", res)
	}
	var got struct {
		Mode      string `json:"mode"`
		Size      int    `json:"size"`
		FirstLine string `json:"first_line"`
		Path      string `json:"path"`
	}
	if err := json.Unmarshal([]byte(res.Reply), &got); err != nil {
		t.Fatalf("reply %q: %v", res.Reply, err)
	}
	if (got.Mode != "0600" && !isWindows()) || got.Size != len(res.Prompt) || got.FirstLine != "## Event Context" {
		t.Errorf("prompt file = %+v; want mode 0600, %d bytes, starting with the Event Context", got, len(res.Prompt))
	}
	if _, err := os.Stat(got.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("prompt file %s still exists after the run (stat: %v)", got.Path, err)
	}
	c := mustCalls(t, state)[0]
	if c.Stdin != "" || len(c.Args) != 2 || c.Args[0] != "--input" || c.Args[1] != got.Path {
		t.Errorf("call = args %q stdin %q; want [--input <file>] and no stdin", c.Args, c.Stdin)
	}
}

func TestRunner_Outcomes(t *testing.T) {
	tests := []struct {
		name     string
		agent    func(t *testing.T) Agent
		runner   Runner
		outcome  Outcome
		reason   []string
		reply    string
		exitCode int
	}{
		{
			name:    "non-zero exit with stderr",
			agent:   func(t *testing.T) Agent { a, _ := fakeCommand(t, fakeagent.Fail, "model overloaded", "7"); return a },
			outcome: OutcomeFailed, reason: []string{"exit status 7", "model overloaded"}, exitCode: 7,
		},
		{
			name: "non-zero exit with a JSON result",
			agent: func(t *testing.T) Agent {
				a, _ := fakePreset(t, PresetClaude)
				a.Env[fakeagent.EnvFail] = "error"
				return a
			},
			outcome: OutcomeFailed, reason: []string{"exit status 1", "API Error: 401"}, reply: "API Error: 401", exitCode: 1,
		},
		{
			name:    "empty output",
			agent:   func(t *testing.T) Agent { a, _ := fakeCommand(t, fakeagent.Empty); return a },
			outcome: OutcomeFailed, reason: []string{"no output"},
		},
		{
			name: "json without the reply",
			agent: func(t *testing.T) Agent {
				a, _ := fakeCommand(t, fakeagent.JSON)
				a.Output, a.Reply = OutputJSON, "/answer/missing"
				return a
			},
			outcome: OutcomeFailed, reason: []string{"could not read the reply", "/answer/missing"},
		},
		{
			name: "program not found",
			agent: func(t *testing.T) Agent {
				return Agent{Command: []string{filepath.Join(t.TempDir(), "no-such-agent")}}
			},
			outcome: OutcomeFailed, reason: []string{"could not start", "no-such-agent"}, exitCode: -1,
		},
		{
			name:    "huge output is cut and counted",
			agent:   func(t *testing.T) Agent { a, _ := fakeCommand(t, fakeagent.Huge, "3000000"); return a },
			runner:  Runner{MaxStdout: 64 << 10},
			outcome: OutcomeOK, reply: "yyyy",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, &tt.runner, runRequest(t, tt.agent(t), planV1))
			if res.Outcome != tt.outcome || res.ExitCode != tt.exitCode {
				t.Fatalf("Run = outcome %s exit %d reason %q; want %s exit %d", res.Outcome, res.ExitCode, res.Reason, tt.outcome, tt.exitCode)
			}
			for _, w := range tt.reason {
				if !strings.Contains(res.Reason, w) {
					t.Errorf("reason %q does not mention %q", res.Reason, w)
				}
			}
			if !strings.HasPrefix(res.Reply, tt.reply) {
				t.Errorf("reply = %q; want it to start with %q", preview(res.Reply, 80), tt.reply)
			}
		})
	}
}

func TestRunner_HugeOutputIsFlagged(t *testing.T) {
	agent, _ := fakeCommand(t, fakeagent.Huge, "3000000")
	res := mustRun(t, &Runner{MaxStdout: 64 << 10}, runRequest(t, agent, planV1))
	if len(res.Stdout) != 64<<10 || res.StdoutBytes != 3000000 || !res.StdoutTruncated {
		t.Errorf("stdout kept %d of %d bytes, truncated=%v; want 65536 of 3000000, truncated", len(res.Stdout), res.StdoutBytes, res.StdoutTruncated)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "cut") }) {
		t.Errorf("notes %q do not say the reply was cut", res.Notes)
	}
}

func TestRunner_TimesOut(t *testing.T) {
	agent, _ := fakeCommand(t, fakeagent.Hang)
	agent.Timeout = time.Second
	start := time.Now()
	res := mustRun(t, &Runner{Grace: 200 * time.Millisecond}, runRequest(t, agent, planV1))
	t.Logf("a hanging agent with a 1s timeout and 200ms grace returned after %v", time.Since(start))
	if res.Outcome != OutcomeTimeout || res.Reason != "timed out after 1s" || res.ExitCode != -1 {
		t.Errorf("Run(hang) = %s %q exit %d; want timeout", res.Outcome, res.Reason, res.ExitCode)
	}
}

func TestRunner_Canceled(t *testing.T) {
	agent, state := fakeCommand(t, fakeagent.Hang)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		res, err := (&Runner{Grace: 200 * time.Millisecond}).Run(ctx, runRequest(t, agent, planV1))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	testutil.WaitFor(t, 30*time.Second, "the agent to start", func() bool { c, _ := fakeagent.Calls(state); return len(c) == 1 })
	cancel()
	res := <-done
	if res.Outcome != OutcomeCanceled || !strings.HasPrefix(res.Reason, "canceled") {
		t.Errorf("Run(hang) canceled = %s %q; want canceled", res.Outcome, res.Reason)
	}
}

func TestRunner_AlreadyCanceled(t *testing.T) {
	agent, state := fakeCommand(t, fakeagent.Echo)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := (&Runner{}).Run(ctx, runRequest(t, agent, planV1))
	if err != nil || res.Outcome != OutcomeCanceled {
		t.Errorf("Run(canceled ctx) = %s %q, %v; want canceled", res.Outcome, res.Reason, err)
	}
	if calls := mustCalls(t, state); len(calls) != 0 {
		t.Errorf("the agent ran %d times after cancellation", len(calls))
	}
}

func TestRunner_LongJSONLine(t *testing.T) {
	agent, _ := fakeCommand(t, fakeagent.LongLine, "200000")
	agent.Output, agent.Reply = OutputJSON, "/answer"
	res := mustRun(t, &Runner{}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeOK || res.Reply != "LONG LINE REPLY after 200000 bytes" {
		t.Errorf("Run(200 KB JSON line) = %s %q %q", res.Outcome, res.Reason, res.Reply)
	}
}

func TestRunner_StreamingPresetReadsPastTheCap(t *testing.T) {
	agent, _ := fakePreset(t, PresetCodex)
	agent.Env[fakeagent.EnvPad] = "300000"
	res := mustRun(t, &Runner{MaxStdout: 64 << 10}, runRequest(t, agent, planV1))
	if res.Outcome != OutcomeOK || res.Reply != "FAKE REPLY (user messages seen: 1)" || !res.StdoutTruncated {
		t.Errorf("Run(codex, 300 KB event, 64 KiB cap) = %s %q reply %q truncated=%v; want the reply from past the cap",
			res.Outcome, res.Reason, res.Reply, res.StdoutTruncated)
	}
}

func TestRunner_RejectsBadRequests(t *testing.T) {
	agent, state := fakePreset(t, PresetClaude)
	tests := []struct {
		name   string
		mutate func(*Request)
		want   error
	}{
		{"model that is a flag", func(r *Request) { r.Model = "--dangerously-skip-permissions" }, ErrInvalidModel},
		{"resume handle that is a flag", func(r *Request) { r.Resume = "--continue" }, ErrBadRequest},
		{"session that is not a UUID", func(r *Request) { r.Session = "abc" }, ErrBadRequest},
		{"relative vault", func(r *Request) { r.Vault = "vault" }, ErrBadRequest},
		{"turn zero", func(r *Request) { r.Turn = 0 }, ErrBadRequest},
		{"an occurrence on a Modified event", func(r *Request) {
			r.Schedule = &Occurrence{Schedule: "daily 07:00", Zone: "UTC", Due: time.Unix(1, 0), Count: 1}
		}, ErrBadRequest},
		{"a scheduled occurrence without its due time", func(r *Request) {
			r.Event.Type, r.Schedule = strand.Scheduled, &Occurrence{Schedule: "daily 07:00", Zone: "UTC", Count: 1}
		}, ErrBadRequest},
		{"unknown fired-by", func(r *Request) { r.FiredBy = "cron" }, ErrBadRequest},
		{"path escaping the vault", func(r *Request) { r.Event.Strand.Path = "../x.md" }, ErrBadRequest},
		{"invalid event", func(r *Request) { r.Event.Type = 0 }, ErrBadRequest},
		{"invalid agent", func(r *Request) { r.Agent.Preset = "nope" }, ErrInvalidAgent},
	}
	for _, tt := range tests {
		req := runRequest(t, agent, planV1)
		tt.mutate(&req)
		if _, err := (&Runner{}).Run(context.Background(), req); !errors.Is(err, tt.want) {
			t.Errorf("%s: Run error = %v; want %v", tt.name, err, tt.want)
		}
	}
	if calls := mustCalls(t, state); len(calls) != 0 {
		t.Errorf("an invalid request started the agent %d times", len(calls))
	}
}

func TestRunner_PromptTooLarge(t *testing.T) {
	agent, _ := fakeCommand(t, fakeagent.Echo)
	agent.Instructions = strings.Repeat("be thorough\n", 1000)
	_, err := (&Runner{Limits: Limits{Prompt: 4096}}).Run(context.Background(), runRequest(t, agent, planV1))
	if !errors.Is(err, ErrPromptTooLarge) {
		t.Errorf("Run(12 KB instructions, 4 KiB cap) error = %v; want ErrPromptTooLarge", err)
	}
}

func TestRunner_PromptMatchesRun(t *testing.T) {
	agent, _ := fakeCommand(t, fakeagent.Echo)
	agent.Instructions = "Be brief."
	req := runRequest(t, agent, planV1)
	r := &Runner{}
	p, err := r.Prompt(req)
	if err != nil {
		t.Fatal(err)
	}
	if res := mustRun(t, r, req); res.Prompt != p || !strings.HasPrefix(p, "Be brief.\n\n## Event Context\n") {
		t.Errorf("Prompt() = %q; Run used %q", p, res.Prompt)
	}
}

func isWindows() bool { return filepath.Separator == '\\' }

// preview shortens s for a message.
func preview(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return s[:textbound.CutBack(s, max)] + "…"
}
