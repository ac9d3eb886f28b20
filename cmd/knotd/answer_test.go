package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/vault"
	"github.com/stretchr/testify/require"
)

// questionDaemon stands in for a running knotd on the control socket: it
// has questions waiting, and records the answers it gets.
type questionDaemon struct {
	mu      sync.Mutex
	waiting []control.Question
	answers []string
}

func (d *questionDaemon) Status(context.Context) (control.Status, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return control.Status{Vault: "v", PID: 1, Answering: true, Now: time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC),
		Running: []control.Running{}, Queued: []control.Queued{}, Failures: []control.Failure{}, Paused: []control.Paused{},
		Deferred: []control.Paused{}, Questions: append([]control.Question{}, d.waiting...)}, nil
}
func (d *questionDaemon) Run(context.Context, []string) (control.Result, error) {
	return control.Result{}, nil
}
func (d *questionDaemon) Retry(context.Context, time.Time) (control.Result, error) {
	return control.Result{}, nil
}
func (d *questionDaemon) Pause(context.Context, []string, string) (control.Result, error) {
	return control.Result{}, nil
}
func (d *questionDaemon) Resume(context.Context, []string) (control.Result, error) {
	return control.Result{}, nil
}
func (d *questionDaemon) Questions(context.Context) ([]control.Question, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]control.Question{}, d.waiting...), nil
}
func (d *questionDaemon) Answer(_ context.Context, id string, v question.Verdict, why string, from question.Source) (control.Answered, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answers = append(d.answers, fmt.Sprintf("%s %s %q %s", v, id, why, from))
	for i, q := range d.waiting {
		if strings.HasPrefix(q.ID, id) { // (the daemon's prefix rules: vault/internal/ctl's tests)
			d.waiting = append(d.waiting[:i], d.waiting[i+1:]...)
			return control.Answered{Question: q, Verdict: v, Next: "knotd continues the run now"}, nil
		}
	}
	return control.Answered{}, control.NoQuestion("no question " + id + " waits (it was answered already, or there is none): no question waits")
}

// answered returns the answers d got.
func (d *questionDaemon) answered() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string{}, d.answers...)
}

// serveDaemon serves d on the control socket of the vault v (which knotd
// made) until the test ends.
func serveDaemon(t *testing.T, v string, d *questionDaemon) {
	t.Helper()
	sock, known, err := vault.ControlSocket("", v)
	require.NoError(t, err)
	require.True(t, known)
	ln, err := control.Listen(sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- control.Serve(ctx, ln, d, nil) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// TestAnswer_CommandLine: knotd approve, deny and withdraw check their
// arguments; with no daemon they answer on the vault itself, and an id no
// question has exits 1 saying that none waits.
func TestAnswer_CommandLine(t *testing.T) {
	v, _ := setup(t)
	plain := t.TempDir()
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	code, _, errOut := knotd(t, "--once", v) // makes the vault
	require.Equal(t, exitOK, code, errOut)
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"approve"}, exitUsage, "knotd approve needs the question's ID"},
		{[]string{"deny", "plan.md", v}, exitUsage, `knotd deny: "plan.md" is not a question's id`},
		{[]string{"approve", "3f9", v}, exitUsage, `"3f9" is not a question's id`},
		{[]string{"withdraw", "3f9a2c1b", "--why", "x", v}, exitUsage, "knotd withdraw: unknown flag --why"},
		{[]string{"approve", "3f9a2c1b", v, v}, exitUsage, "knotd approve: one VAULT at most"},
		{[]string{"approve", "3f9a2c1b", plain}, exitUsage, "is not in a knotd vault"},
		{[]string{"approve", "3f9a2c1b", v}, exitFailed, "knotd approve: no question 3f9a2c1b waits (it was answered already, or there is none): no question waits"},
		{[]string{"deny", "3F9A", "--why", "no", v}, exitFailed, "knotd deny: no question whose id begins with 3f9a waits: no question waits"},
		{[]string{"withdraw", "3f9a2c1b", v}, exitFailed, "knotd withdraw: no question 3f9a2c1b waits"},
	} {
		code, out, errOut := knotd(t, tc.args...)
		require.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.err, "%v", tc.args)
		require.Empty(t, out, "%v", tc.args)
	}
	code, out, _ := knotd(t, "help", "approve")
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "usage: knotd approve ID [--why TEXT] [VAULT]")
	require.Contains(t, out, "--why TEXT")
	code, out, _ = knotd(t, "withdraw", "--help")
	require.Equal(t, exitOK, code)
	require.NotContains(t, out, "\n  --why")
}

// TestAnswer_ThroughDaemon: with a knotd running, the commands answer
// through its socket, from the command, with the reason given, say what
// the answer did and what happens next, and say the daemon's refusal;
// knotd status lists the questions that wait, in text and in JSON.
func TestAnswer_ThroughDaemon(t *testing.T) {
	v, _ := setup(t)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	code, _, errOut := knotd(t, "--once", v)
	require.Equal(t, exitOK, code, errOut)
	asked := time.Date(2026, 11, 28, 10, 55, 0, 0, time.UTC)
	d := &questionDaemon{waiting: []control.Question{
		{ID: "3f9a2c1b", Note: "notes/plan.md", Agent: "claude", RunID: "r1", Asked: asked, Summary: "edit notes/plan.md (Write)",
			Call: question.Call{Tool: "Write", Kind: question.KindEdit, Path: "notes/plan.md"}},
		{ID: "77aa0011", Note: "b.md", Agent: "gemini", RunID: "r2", Asked: asked.Add(-2 * time.Hour), Summary: "run `make test` (shell)",
			Call: question.Call{Tool: "shell", Kind: question.KindCommand, Command: "make test"}},
	}}
	serveDaemon(t, v, d)

	code, out, errOut := knotd(t, "status", v)
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, "questions waiting for your answer (2):")
	require.Regexp(t, `3f9a2c1b\s+notes/plan\.md\s+edit notes/plan\.md \(Write\)\s+asked 5m ago`, out)
	require.Regexp(t, "77aa0011\\s+b\\.md\\s+run `make test` \\(shell\\)\\s+asked 2h5m ago", out)
	require.Contains(t, out, "knotd approve ID, or knotd deny ID --why TEXT")

	code, out, errOut = knotd(t, "status", "--json", v)
	require.Equal(t, exitOK, code, errOut)
	var st struct {
		Questions []control.Question `json:"questions"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Equal(t, d.waiting, st.Questions)

	code, out, errOut = knotd(t, "approve", "3f9a2c1b", v)
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "approved 3f9a2c1b (claude asked, in notes/plan.md, to edit notes/plan.md (Write)): knotd continues the run now\n", out)
	code, out, errOut = knotd(t, "deny", "--why", "not before the release", "77AA", v)
	require.Equal(t, exitOK, code, errOut)
	require.Equal(t, "denied 77aa0011 (gemini asked, in b.md, to run `make test` (shell)): knotd continues the run now\n", out)
	code, _, errOut = knotd(t, "withdraw", "3f9a2c1b", v)
	require.Equal(t, exitFailed, code)
	require.Equal(t, "knotd withdraw: no question 3f9a2c1b waits (it was answered already, or there is none): no question waits\n", errOut)
	require.Equal(t, []string{`approve 3f9a2c1b "" command`, `deny 77aa "not before the release" command`, `withdraw 3f9a2c1b "" command`}, d.answered())

	code, out, errOut = knotd(t, "status", v)
	require.Equal(t, exitOK, code, errOut)
	require.NotContains(t, out, "questions waiting")
}
