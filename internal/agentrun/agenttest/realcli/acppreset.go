package realcli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/transcript"
)

// recordingFS is a FileSystem that writes into dir and records each call.
type recordingFS struct {
	dir    string
	mu     sync.Mutex
	writes []string
}

func (f *recordingFS) ReadTextFile(_ context.Context, path string, _, _ int) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

func (f *recordingFS) WriteTextFile(_ context.Context, path, content string) error {
	f.mu.Lock()
	f.writes = append(f.writes, path)
	f.mu.Unlock()
	return os.WriteFile(path, []byte(content), 0o600)
}

func (f *recordingFS) MayEdit(context.Context, []string) error { return nil }

func (f *recordingFS) written() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.writes)
}

// RunACPPreset drives the real ACP agent of ad through knotd's Runner and
// preset, against its API stand-in: a new turn (reply, usage, blocks as
// they came), a resumed turn whose model call sees the first, the session
// store lost (one fresh session), a write refused at read-only and
// allowed at edit, and at ask held for Request.Ask: written when
// approved, not when denied.
func RunACPPreset(t *testing.T, ad ACPAdapter, preset string) {
	t.Helper()
	bin := ad.Bin(t)
	home := t.TempDir()
	env, api := ad.StandIn(t, home)
	vault := t.TempDir()
	fs := &recordingFS{dir: vault}
	runner := &agentrun.Runner{Environ: func() []string { return env }}
	rc := CLI[struct{}]{Runner: runner, Agent: agentrun.Agent{
		Name: preset, Preset: preset, Command: []string{bin}, Timeout: 2 * time.Minute}}
	run := func(req agentrun.Request) (agentrun.Result, int) {
		t.Helper()
		var live int
		req.FS = fs
		req.OnOutput = func(m transcript.AssistantMessage) { live += len(m.Blocks) }
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		res, err := runner.Run(ctx, req)
		if err != nil {
			t.Fatalf("Run(turn %d): %v", req.Turn, err)
		}
		return res, live
	}
	mustOK := func(res agentrun.Result, turn int) {
		t.Helper()
		if res.Outcome != agentrun.OutcomeOK {
			t.Fatalf("turn %d = %s %q; want ok\nargv %q\nnotes %q\nstderr %s", turn, res.Outcome, res.Reason, res.Argv, res.Notes, res.Stderr)
		}
	}

	// A new turn: its reply, usage and blocks as they came.
	req1 := rc.FirstTurn(vault)
	res1, live := run(req1)
	mustOK(res1, 1)
	if res1.Reply != "MOCK REPLY (user messages seen: 1)" || res1.Resume == "" || res1.Restarted != nil {
		t.Errorf("turn 1 reply %q resume %q restarted %+v; want the stand-in's reply in a new session", res1.Reply, res1.Resume, res1.Restarted)
	}
	if res1.Usage == nil || res1.Usage.InputTokens != int64(ad.Usage[0]) || res1.Usage.OutputTokens != int64(ad.Usage[1]) {
		t.Errorf("turn 1 usage %+v; want %d input and %d output tokens", res1.Usage, ad.Usage[0], ad.Usage[1])
	}
	if live == 0 {
		t.Error("turn 1: no block reached OnOutput during the run")
	}

	// The resumed turn: the model sees the first.
	req2 := NextTurn(req1, res1.Resume)
	res2, _ := run(req2)
	mustOK(res2, 2)
	if res2.Resume != res1.Resume || res2.Restarted != nil || res2.Reply != "MOCK REPLY (user messages seen: 2)" {
		t.Errorf("turn 2 reply %q resume %q restarted %+v; want the session %s continued", res2.Reply, res2.Resume, res2.Restarted, res1.Resume)
	}
	if !slices.ContainsFunc(api.Prompts(), func(p []string) bool { return slices.Equal(p, []string{res1.Prompt, res2.Prompt}) }) {
		t.Errorf("turn 2: no model call saw turn 1's prompt then turn 2's: %q", api.Prompts())
	}

	for _, p := range api.Prompts() {
		if strings.HasPrefix(p[len(p)-1], "[SUGGESTION MODE") {
			t.Errorf("the agent asked the model for prompt suggestions, which the preset turns off")
		}
	}

	// The session store is gone: one fresh session.
	if err := os.RemoveAll(ad.Store(home)); err != nil {
		t.Fatal(err)
	}
	req3 := NextTurn(req2, res2.Resume)
	res3, _ := run(req3)
	mustOK(res3, 3)
	if res3.Restarted == nil || res3.Restarted.Handle != res2.Resume || res3.Resume == res2.Resume || res3.Resume == "" {
		t.Errorf("turn 3 resume %q restarted %+v; want a fresh session after the lost %s", res3.Resume, res3.Restarted, res2.Resume)
	}

	// A write: refused at read-only, allowed at edit, each in a
	// new session (the stand-in calls the tool once a
	// conversation).
	for _, perm := range []agentrun.Permissions{agentrun.PermReadOnly, agentrun.PermEdit} {
		target := filepath.Join(vault, "out-"+string(perm)+".md")
		api.Write(target, "written\n")
		req := NextTurn(req3, "")
		req.Agent.Permissions = perm
		res, _ := run(req)
		_, err := os.Stat(target)
		verdict := "refused"
		if perm == agentrun.PermEdit {
			verdict = "allowed"
			mustOK(res, req.Turn)
			if err != nil {
				t.Errorf("permissions edit: the file was not written: %v", err)
			}
		} else {
			if err == nil {
				t.Errorf("permissions read-only: the agent wrote %s", target)
			}
			// Claude's model sees the refusal and answers; Codex
			// and OpenCode end the turn: the run says why.
			if res.Outcome != agentrun.OutcomeOK && !strings.Contains(res.Reason, "when knotd refused its request for permission (permissions read-only)") {
				t.Errorf("permissions read-only: %s %q; want ok, or a failure that says knotd refused the request", res.Outcome, res.Reason)
			}
		}
		if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, ": "+verdict+" (permissions "+string(perm)+")") }) {
			t.Errorf("permissions %s: no note of a %s permission request: %q (outcome %s %q)", perm, verdict, res.Notes, res.Outcome, res.Reason)
		}
		if got := slices.Contains(fs.written(), target); got != (ad.FSWrite && perm == agentrun.PermEdit) {
			t.Errorf("permissions %s: written through knotd's file system %v; want %v", perm, got, ad.FSWrite && perm == agentrun.PermEdit)
		}
		t.Logf("permissions %s: %s %q, notes %q", perm, res.Outcome, res.Reason, res.Notes)
	}

	// At permissions ask: the write's request reaches Request.Ask as a
	// question; approved, the file is written; denied, it is not.
	for _, v := range []question.Verdict{question.Approve, question.Deny} {
		target := filepath.Join(vault, "out-ask-"+string(v)+".md")
		api.Write(target, "written\n")
		req := NextTurn(req3, "")
		req.Agent.Permissions = agentrun.PermAsk
		var (
			mu    sync.Mutex
			asked []question.Call
		)
		req.Ask = func(_ context.Context, c question.Call) (question.Answer, bool) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, c)
			return question.Answer{ID: question.NewID(req.RunID, c.Hash()), CallHash: c.Hash(), Verdict: v, Why: "not now", From: question.FromNote}, true
		}
		res, _ := run(req)
		mu.Lock()
		if len(asked) != 1 || asked[0].Kind != question.KindEdit || asked[0].Path != filepath.Base(target) {
			t.Errorf("ask, %s: Ask was called for %+v; want the write of %s", v, asked, filepath.Base(target))
		}
		mu.Unlock()
		_, err := os.Stat(target)
		if v == question.Approve {
			mustOK(res, req.Turn)
			if err != nil {
				t.Errorf("ask, approved: the file was not written: %v", err)
			}
		} else {
			if err == nil {
				t.Errorf("ask, denied: the agent wrote %s", target)
			}
			// Claude's model sees the refusal and answers; Codex and
			// OpenCode end the turn: the run says why.
			if res.Outcome != agentrun.OutcomeOK && !strings.Contains(res.Reason, "when knotd refused a call the user denied (permissions ask)") {
				t.Errorf("ask, denied: %s %q; want ok, or a failure that says knotd refused the call", res.Outcome, res.Reason)
			}
		}
		t.Logf("ask, %s: %s %q, notes %q", v, res.Outcome, res.Reason, res.Notes)
	}
}
