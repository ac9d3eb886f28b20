package claudetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// claudeTimeout bounds one run of the real CLI, which answers in about a
// second against the stand-in but can retry an API error forever.
const claudeTimeout = 2 * time.Minute

// claudeRun is what one run of the real CLI did.
type claudeRun struct {
	stdout, stderr string
	exit           int
}

// runClaude runs the real CLI bin in dir with env, stdin and args, killing
// its process group if it outlives claudeTimeout (a test failure).
func runClaude(t *testing.T, bin, dir string, env []string, stdin string, args ...string) claudeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), claudeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	killGroupOnCancel(cmd)
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	run := claudeRun{stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil {
		t.Fatalf("claude %q: killed after %v: %v\nstdout: %q\nstderr: %q", args, claudeTimeout, err, run.stdout, run.stderr)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		run.exit = exitErr.ExitCode()
	default:
		t.Fatalf("claude %q: %v", args, err)
	}
	return run
}

// fixture returns the content of one file of the recorded Claude Code
// fixtures copied into agents/claude/testdata/recorded (see the README there).
func fixture(t *testing.T, name string) string {
	t.Helper()
	root, err := agenttest.FindRoot(CLI.Script)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "internal", "agents", "claude", "testdata", "recorded", name))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return string(data)
}

// resultFields are the fields of Claude Code's JSON result that do not
// change from run to run.
var resultFields = []string{"type", "subtype", "is_error", "result", "session_id", "stop_reason", "num_turns"}

func TestAnthropic_RealClaude(t *testing.T) {
	bin := ClaudeCLI(t)
	s := NewAnthropic(t)
	env := s.ClaudeEnv(t.TempDir())
	vault := t.TempDir()
	const (
		id      = "11111111-2222-4333-8444-555555555555" // the fixtures' ids
		missing = "99999999-2222-4333-8444-555555555555"
		first   = "## Event Context\nEvent: Created\nStrand: ideas/plan.md\n\n# Plan\n- [ ] write it\n"
		second  = "## Event Context\nEvent: Modified\nStrand: ideas/plan.md\n\n# Plan\n- [x] write it\n"
	)
	// The cases run in order, each on the session the previous ones left.
	tests := []struct {
		name    string
		args    []string
		stdin   string
		fixture string // the recorded run: <fixture>.exit and .json or .stderr
		// The model call the stand-in sees (none when wantPrompts is nil):
		// the user prompts and assistant replies in the request.
		wantPrompts, wantReplies []string
	}{
		{
			name:        "new session",
			args:        []string{"-p", "--output-format", "json", "--session-id", id},
			stdin:       first,
			fixture:     "json-new-session",
			wantPrompts: []string{first},
		},
		{
			name:        "resume",
			args:        []string{"-p", "--output-format", "json", "--resume", id},
			stdin:       second,
			fixture:     "json-resume",
			wantPrompts: []string{first, second},
			wantReplies: []string{"MOCK REPLY (user messages seen: 1)"},
		},
		{
			name:    "session id in use",
			args:    []string{"-p", "--output-format", "json", "--session-id", id},
			stdin:   "again",
			fixture: "json-session-in-use",
		},
		{
			name:    "resume missing session",
			args:    []string{"-p", "--output-format", "json", "--resume", missing},
			stdin:   "again",
			fixture: "json-resume-missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(s.MessageRequests())
			run := runClaude(t, bin, vault, env, tt.stdin, tt.args...)

			if got, want := "exit="+strconv.Itoa(run.exit), strings.TrimSpace(fixture(t, tt.fixture+".exit")); got != want {
				t.Errorf("claude %q: %s; want %s (stderr %q)", tt.args, got, want, run.stderr)
			}
			if tt.wantPrompts == nil {
				if run.stdout != "" {
					t.Errorf("claude %q: stdout = %q; want nothing", tt.args, run.stdout)
				}
				if got, want := strings.TrimSpace(run.stderr), strings.TrimSpace(fixture(t, tt.fixture+".stderr")); got != want {
					t.Errorf("claude %q: stderr = %q; want %q", tt.args, got, want)
				}
			} else {
				var got, want map[string]any
				if err := json.Unmarshal([]byte(run.stdout), &got); err != nil {
					t.Fatalf("claude %q: stdout %q: %v (stderr %q)", tt.args, run.stdout, err, run.stderr)
				}
				if err := json.Unmarshal([]byte(fixture(t, tt.fixture+".json")), &want); err != nil {
					t.Fatalf("fixture %s.json: %v", tt.fixture, err)
				}
				for _, k := range resultFields {
					if got[k] != want[k] {
						t.Errorf("claude %q: result %s = %v; want %v as recorded", tt.args, k, got[k], want[k])
					}
				}
			}

			calls := s.MessageRequests()[before:]
			if tt.wantPrompts == nil {
				if len(calls) != 0 {
					t.Errorf("claude %q made %d model calls; want none", tt.args, len(calls))
				}
				return
			}
			if len(calls) != 1 {
				t.Fatalf("claude %q made %d model calls; want 1", tt.args, len(calls))
			}
			call := calls[0]
			if got := call.UserPrompts(); !slices.Equal(got, tt.wantPrompts) {
				t.Errorf("claude %q: the model saw user prompts %q; want %q", tt.args, got, tt.wantPrompts)
			}
			var replies []string
			for _, m := range call.Messages {
				if m.Role == "assistant" {
					replies = append(replies, m.Text())
				}
			}
			if !slices.Equal(replies, tt.wantReplies) {
				t.Errorf("claude %q: the model saw assistant replies %q; want %q", tt.args, replies, tt.wantReplies)
			}
			if got := call.Header.Get("X-Api-Key"); got != "sk-dummy" {
				t.Errorf("claude %q: X-Api-Key = %q; want sk-dummy", tt.args, got)
			}
		})
	}
	for _, r := range s.Requests() {
		if r.Status != 200 {
			t.Errorf("the stand-in answered %s %s with %d", r.Method, r.Path, r.Status)
		}
	}
}

// TestAnthropic_RealClaudeHangsOnAuthError reproduces what the fixtures
// record: answered 401, Claude Code keeps retrying and prints nothing, so
// an agent run needs a deadline that kills its process group.
func TestAnthropic_RealClaudeHangsOnAuthError(t *testing.T) {
	bin := ClaudeCLI(t)
	s := NewAnthropic(t)
	s.SetStatus(401)
	ctx, cancel := context.WithTimeout(t.Context(), claudeTimeout)
	defer cancel()
	args := []string{"-p", "--output-format", "json"}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = t.TempDir(), s.ClaudeEnv(t.TempDir())
	cmd.Stdin = strings.NewReader("hello")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	killGroupOnCancel(cmd)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// Wait for the third refused call, then stop it.
	const calls = 3
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(s.MessageRequests()) < calls {
		select {
		case err := <-done:
			t.Fatalf("claude %q exited (%v) after %d calls answered 401; want it retrying\nstdout: %q\nstderr: %q",
				args, err, len(s.MessageRequests()), stdout.String(), stderr.String())
		case <-ctx.Done():
			<-done
			t.Fatalf("claude %q made %d calls within %v; want %d", args, len(s.MessageRequests()), claudeTimeout, calls)
		case <-tick.C:
		}
	}
	cancel()
	if err := <-done; err == nil {
		t.Errorf("claude %q: Wait after cancel = nil; want killed", args)
	}
	if stdout.Len() != 0 {
		t.Errorf("claude %q: stdout = %q; want nothing", args, stdout.String())
	}
	for _, r := range s.Requests() {
		if r.Status != 401 {
			t.Errorf("the stand-in answered %s %s with %d; want 401", r.Method, r.Path, r.Status)
		}
	}
}
