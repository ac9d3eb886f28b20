package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/agents/claude"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/transcript"
)

// runTranscript reads the transcript of run runID, failing on any warning,
// and checks the file's and the directory's modes and the seq numbers.
func runTranscript(t *testing.T, e *env, runID string) []transcript.Event {
	t.Helper()
	dir := e.runsDir()
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("runs directory %s: %v, %v; want mode 0700", dir, fi, err)
	}
	path := filepath.Join(dir, runID+transcript.Ext)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("transcript %s: %v, %v; want mode 0600", path, fi, err)
	}
	events, warns, err := transcript.ReadRun(dir, runID)
	if err != nil || len(warns) > 0 {
		t.Fatalf("ReadRun(%s) = %v, %v", runID, warns, err)
	}
	for i, ev := range events {
		if ev.Seq != int64(i+1) || ev.RunID != runID {
			t.Errorf("event %d: seq %d run %s; want seq %d run %s", i, ev.Seq, ev.RunID, i+1, runID)
		}
	}
	return events
}

func eventTypes(events []transcript.Event) []transcript.Type {
	types := make([]transcript.Type, len(events))
	for i, ev := range events {
		types[i] = ev.Type
	}
	return types
}

// payload decodes the payload of the only event of type typ.
func payload[P transcript.Payload](t *testing.T, events []transcript.Event, typ transcript.Type) P {
	t.Helper()
	var found []P
	for _, ev := range events {
		if ev.Type != typ {
			continue
		}
		p, err := ev.Payload()
		if err != nil {
			t.Fatalf("payload of %s: %v", typ, err)
		}
		found = append(found, p.(P))
	}
	if len(found) != 1 {
		t.Fatalf("%d %s events; want 1", len(found), typ)
	}
	return found[0]
}

var fullRun = []transcript.Type{transcript.RunStarted, transcript.MessageUser, transcript.MessageAssistant, transcript.RunFinished, transcript.TieOffAppended}

// TestOnce_WritesRunTranscript: each run writes .knot/runs/<run-id>.jsonl,
// from run.started (with the command line) and the prompt as sent to the
// section's place in the tie-off, and the tie-off's run marker names it.
func TestOnce_WritesRunTranscript(t *testing.T) {
	tests := []struct {
		name      string
		setup     func(e *env)
		preset    string
		wantArgv  bool
		wantCalls bool
		reply     string // a substring of the assistant's text
	}{
		{name: "digest", setup: func(*env) {}, preset: "digest", reply: "New note **Plan**"},
		{name: "generic command", setup: func(e *env) { e.useAgent("", fakeagent.Echo) }, wantArgv: true, wantCalls: true, reply: "ECHO: "},
		{name: "claude preset", setup: func(e *env) { e.useAgent("claude", fakeagent.Claude) }, preset: "claude", wantArgv: true, wantCalls: true, reply: "FAKE REPLY (user messages seen: 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(e)
			e.onceFresh()
			e.write("notes/plan.md", "# Plan\n\nfirst draft\n")
			sum := e.onceFresh()
			if sum.OK != 1 || len(sum.Runs) != 1 {
				t.Fatalf("summary = %+v; want one ok run", sum)
			}
			runID := sum.Runs[0].RunID
			secs := e.sections("notes/plan.md")
			if len(secs) != 1 || secs[0].RunID != runID {
				t.Fatalf("tie-off sections = %+v; want one, marked with run %s", secs, runID)
			}
			events := runTranscript(t, e, runID)
			if got := eventTypes(events); !slices.Equal(got, fullRun) {
				t.Fatalf("transcript types = %v; want %v", got, fullRun)
			}
			started := payload[transcript.Started](t, events, transcript.RunStarted)
			if started.Strand != "notes/plan.md" || started.Event.String() != "Created" || started.Preset != tt.preset ||
				started.Turn != 1 || started.FiredBy != "once" || started.Session == "" || (len(started.Argv) > 0) != tt.wantArgv {
				t.Errorf("run.started = %+v", started)
			}
			user := payload[transcript.UserMessage](t, events, transcript.MessageUser)
			if !strings.Contains(user.Prompt, "notes/plan.md") || !strings.Contains(user.Prompt, "first draft") {
				t.Errorf("message.user prompt = %q; want the strand's prompt", user.Prompt)
			}
			if tt.wantCalls {
				calls := e.calls()
				if len(calls) != 1 || calls[0].Stdin != user.Prompt || !slices.Equal(calls[0].Args, started.Argv[1:]) {
					t.Errorf("the agent ran with %+v; the transcript says argv %q and prompt %q", calls, started.Argv, user.Prompt)
				}
			}
			msg := payload[transcript.AssistantMessage](t, events, transcript.MessageAssistant)
			text := ""
			for _, b := range msg.Blocks {
				if b.Type == "text" {
					text = b.Text // the reply is the last text block
				}
			}
			if !strings.Contains(text, tt.reply) || !strings.Contains(secs[0].Body, strings.TrimSpace(text)) {
				t.Errorf("message.assistant = %+v; want the reply %q of the tie-off %q", msg, tt.reply, secs[0].Body)
			}
			if tt.preset == agentrun.PresetClaude && (len(msg.Blocks) < 2 || msg.Blocks[0].Type != "thinking" || msg.Blocks[0].Fidelity != transcript.Native) {
				t.Errorf("claude's transcript lacks its thinking, natively: %+v", msg.Blocks)
			}
			fin := payload[transcript.Finished](t, events, transcript.RunFinished)
			if fin.Outcome != "ok" || fin.Duration <= 0 {
				t.Errorf("run.finished = %+v; want ok with a duration", fin)
			}
			tie := payload[transcript.TieOff](t, events, transcript.TieOffAppended)
			if tie.Path != "notes/plan.tieoff.md" || tie.Offset != secs[0].Offset || tie.Replaced {
				t.Errorf("tieoff.appended = %+v; want notes/plan.tieoff.md at offset %d", tie, secs[0].Offset)
			}

			// The second run's section comes after the first.
			e.write("notes/plan.md", e.read("notes/plan.md")+"second thought\n")
			sum = e.onceFresh()
			secs = e.sections("notes/plan.md")
			if sum.OK != 1 || len(secs) != 2 || secs[1].RunID != sum.Runs[0].RunID {
				t.Fatalf("second pass %+v, sections %+v", sum, secs)
			}
			events = runTranscript(t, e, sum.Runs[0].RunID)
			if tie := payload[transcript.TieOff](t, events, transcript.TieOffAppended); tie.Offset != secs[1].Offset || tie.Offset == 0 {
				t.Errorf("second tieoff.appended = %+v; want offset %d", tie, secs[1].Offset)
			}
			if s := payload[transcript.Started](t, events, transcript.RunStarted); s.Turn != 2 || s.Event.String() != "Modified" {
				t.Errorf("second run.started = %+v; want turn 2 of a Modified", s)
			}
		})
	}
}

// TestOnce_FailedRunTranscript: a failed agent's transcript says how it
// failed; a strand that cannot be run at all still gets one.
func TestOnce_FailedRunTranscript(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Fail, "the model is overloaded", "3")
	e.onceFresh()
	e.write("note.md", "# Note\n")
	e.write("bin.md", "\x00\x00\x00")
	sum := e.onceFresh()
	if sum.Failed != 2 {
		t.Fatalf("summary = %+v; want two failed runs", sum)
	}
	for _, r := range sum.Runs {
		events := runTranscript(t, e, r.RunID)
		fin := payload[transcript.Finished](t, events, transcript.RunFinished)
		tie := payload[transcript.TieOff](t, events, transcript.TieOffAppended)
		secs := e.sections(r.Strand)
		if len(secs) != 1 || !secs[0].Failed || secs[0].RunID != r.RunID || tie.Offset != secs[0].Offset {
			t.Errorf("%s: sections %+v, tieoff.appended %+v; want one failed section of run %s", r.Strand, secs, tie, r.RunID)
		}
		switch r.Strand {
		case "note.md":
			want := []transcript.Type{transcript.RunStarted, transcript.MessageUser, transcript.RunFinished, transcript.TieOffAppended}
			if got := eventTypes(events); !slices.Equal(got, want) {
				t.Errorf("note.md transcript types = %v; want %v (the agent printed nothing)", got, want)
			}
			if fin.Outcome != "failed" || fin.ExitCode != 3 || !strings.Contains(fin.Stderr, "the model is overloaded") || !strings.Contains(fin.Reason, "exit status 3") {
				t.Errorf("note.md run.finished = %+v; want failed, exit 3, with the stderr", fin)
			}
		case "bin.md":
			want := []transcript.Type{transcript.RunStarted, transcript.RunFinished, transcript.TieOffAppended}
			if got := eventTypes(events); !slices.Equal(got, want) {
				t.Errorf("bin.md transcript types = %v; want %v", got, want)
			}
			if fin.Outcome != "failed" || fin.ExitCode != -1 || !strings.Contains(fin.Reason, "NUL bytes") {
				t.Errorf("bin.md run.finished = %+v; want failed, exit -1, saying why", fin)
			}
		default:
			t.Errorf("unexpected run of %s", r.Strand)
		}
	}
}

// TestOpen_RecoveryRecordsTieOff: a run journaled before a crash has no
// tieoff.appended; recovery adds it once, at the section's offset.
func TestOpen_RecoveryRecordsTieOff(t *testing.T) {
	e := newEnv(t)
	p := journaledRun(t, e)
	before := runTranscript(t, e, p.RunID)
	if slices.Contains(eventTypes(before), transcript.TieOffAppended) {
		t.Fatalf("transcript before recovery = %v; want no tieoff.appended", eventTypes(before))
	}
	for range 2 { // the second Open adds nothing
		e.close(e.open())
	}
	events := runTranscript(t, e, p.RunID)
	if got, want := eventTypes(events), append(eventTypes(before), transcript.TieOffAppended); !slices.Equal(got, want) {
		t.Fatalf("transcript after recovery = %v; want %v", got, want)
	}
	secs := e.sections("note.md")
	tie := payload[transcript.TieOff](t, events, transcript.TieOffAppended)
	if len(secs) != 1 || tie.Path != "note.tieoff.md" || tie.Offset != secs[0].Offset {
		t.Errorf("tieoff.appended = %+v; sections %+v", tie, secs)
	}
}

// TestOnce_SecretsStayOutOfTranscriptsAndTieOffs: the value of a
// secret-looking environment variable, printed by the agent or passed on
// its command line, is masked in the transcript and in the tie-off.
func TestOnce_SecretsStayOutOfTranscriptsAndTieOffs(t *testing.T) {
	const secret = "sk-test-1234567890"
	t.Setenv("ANTHROPIC_API_KEY", secret)
	e := newEnv(t)
	e.useAgent("", fakeagent.Fail, "401: invalid x-api-key "+secret, "1")
	e.onceFresh()
	e.write("note.md", "# Note\n")
	sum := e.onceFresh()
	if sum.Failed != 1 {
		t.Fatalf("summary = %+v; want one failed run", sum)
	}
	events := runTranscript(t, e, sum.Runs[0].RunID)
	raw, err := os.ReadFile(filepath.Join(e.runsDir(), sum.Runs[0].RunID+transcript.Ext))
	mustDo(t, err)
	tie := e.read("note.tieoff.md")
	for name, text := range map[string]string{"transcript": string(raw), "tie-off": tie} {
		if strings.Contains(text, secret) {
			t.Errorf("the %s holds the secret:\n%s", name, text)
		}
	}
	fin := payload[transcript.Finished](t, events, transcript.RunFinished)
	started := payload[transcript.Started](t, events, transcript.RunStarted)
	if !strings.Contains(fin.Stderr, "invalid x-api-key "+transcript.Masked) || !slices.Contains(started.Argv, "401: invalid x-api-key "+transcript.Masked) {
		t.Errorf("run.finished stderr %q, argv %q; want the secret masked", fin.Stderr, started.Argv)
	}
	if !strings.Contains(tie, "invalid x-api-key "+transcript.Masked) {
		t.Errorf("tie-off = %q; want the stderr with the secret masked", tie)
	}
}

// TestWatch_TranscriptOfRunningAndStoppedRun: run.started and message.user
// are on disk while the agent runs; a run stopped because knotd stops ends
// with a canceled run.finished and no tieoff.appended.
func TestWatch_TranscriptOfRunningAndStoppedRun(t *testing.T) {
	e := newEnv(t)
	e.grace = 200 * time.Millisecond
	e.useAgent("", gateBehaviour)
	e.write("note.md", "# Note\n")
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("note.md", "# Note\n\nchanged\n")
	e.waitCalls(1)

	runs, err := transcript.List(e.runsDir())
	mustDo(t, err)
	if len(runs) != 1 || runs[0].Finished || runs[0].Strand != "note.md" {
		t.Fatalf("runs while the agent runs = %+v; want one unfinished run of note.md", runs)
	}
	running, _, err := transcript.ReadRun(e.runsDir(), runs[0].RunID)
	mustDo(t, err)
	want := []transcript.Type{transcript.RunStarted, transcript.MessageUser}
	if got := eventTypes(running); !slices.Equal(got, want) {
		t.Errorf("transcript while the agent runs = %v; want %v", got, want)
	}
	if user := payload[transcript.UserMessage](t, running, transcript.MessageUser); user.Prompt != e.calls()[0].Stdin {
		t.Errorf("message.user = %q; the agent was given %q", user.Prompt, e.calls()[0].Stdin)
	}

	mustDo(t, w.stop())
	e.close(v)
	events := runTranscript(t, e, runs[0].RunID)
	want = []transcript.Type{transcript.RunStarted, transcript.MessageUser, transcript.RunFinished}
	if got := eventTypes(events); !slices.Equal(got, want) {
		t.Fatalf("transcript of the stopped run = %v; want %v", got, want)
	}
	fin := payload[transcript.Finished](t, events, transcript.RunFinished)
	if fin.Outcome != "canceled" || !slices.ContainsFunc(fin.Notes, func(n string) bool { return strings.Contains(n, "knotd stopped") }) {
		t.Errorf("run.finished = %+v; want canceled, saying knotd stopped", fin)
	}
}

// TestOnce_CodexUsageIsPerRun: Codex CLI reports a resumed thread's running
// totals; each run's transcript records the run's own use (the totals
// less those the run before reported), so that what `knotd runs` adds up
// is what was used.
func TestOnce_CodexUsageIsPerRun(t *testing.T) {
	e := newEnv(t)
	e.userConfig("default_agent: c\nagents:\n" + e.fakeAgentYAML("c", "codex", fakeagent.Codex))
	e.onceFresh()
	content := "# Note\n"
	var runs []string
	for i := range 3 {
		content += fmt.Sprintf("edit %d\n", i)
		e.write("a.md", content)
		sum := e.onceFresh()
		if sum.OK != 1 {
			t.Fatalf("run %d: %+v", i+1, sum.Runs)
		}
		runs = append(runs, sum.Runs[0].RunID)
	}
	for i, id := range runs {
		fin := payload[transcript.Finished](t, runTranscript(t, e, id), transcript.RunFinished)
		k := int64(i + 1) // the fake's turn k uses 1200·k input tokens, 200 cached, 34 output
		want := transcript.Usage{InputTokens: 1200 * k, CacheReadTokens: 200, OutputTokens: 34}
		if fin.Usage == nil || *fin.Usage != want {
			t.Errorf("run %d usage = %+v; want %+v", i+1, fin.Usage, want)
		}
	}
}

// TestWatch_TranscriptShowsOutputWhileRunning: the blocks of a streaming
// agent's output are in the run's transcript while the agent still runs.
// The fake Claude waits, after printing its assistant message, for a file
// the test creates only once that message is on disk.
func TestWatch_TranscriptShowsOutputWhileRunning(t *testing.T) {
	e := newEnv(t)
	gate := filepath.Join(t.TempDir(), "seen")
	e.userConfig("default_agent: c\nagents:\n" + strings.Replace(e.fakeAgentYAML("c", "claude", fakeagent.Claude),
		"}\n", fmt.Sprintf(", %s: %q}\n", fakeagent.EnvGate, gate), 1))
	e.write("note.md", "# Note\n")
	v := e.open()
	w := e.watch(v, WatchOptions{})
	e.write("note.md", "# Note\n\nchanged\n")

	var live []transcript.Event
	testutil.WaitFor(t, waitTimeout, "the assistant's message in the transcript while the agent runs", func() bool {
		runs, err := transcript.List(e.runsDir())
		if err != nil || len(runs) != 1 {
			return false
		}
		live, _, err = transcript.ReadRun(e.runsDir(), runs[0].RunID)
		return err == nil && slices.Contains(eventTypes(live), transcript.MessageAssistant)
	})
	want := []transcript.Type{transcript.RunStarted, transcript.MessageUser, transcript.MessageAssistant}
	if got := eventTypes(live); !slices.Equal(got, want) {
		t.Errorf("transcript while the agent runs = %v; want %v", got, want)
	}
	msg := payload[transcript.AssistantMessage](t, live, transcript.MessageAssistant)
	if len(msg.Blocks) != 2 || msg.Blocks[0].Type != transcript.BlockThinking || msg.Format != claude.FormatStreamJSON {
		t.Errorf("message.assistant while running = %+v; want the thinking and text blocks", msg)
	}
	mustDo(t, os.WriteFile(gate, nil, 0o600))
	w.settle()
	mustDo(t, w.stop())
	e.close(v)

	runs, err := transcript.List(e.runsDir())
	mustDo(t, err)
	events := runTranscript(t, e, runs[0].RunID)
	want = []transcript.Type{transcript.RunStarted, transcript.MessageUser, transcript.MessageAssistant, transcript.RunFinished, transcript.TieOffAppended}
	if got := eventTypes(events); !slices.Equal(got, want) {
		t.Errorf("transcript of the run = %v; want %v (the streamed message once, nothing left to add)", got, want)
	}
}

// TestOnce_SilentPresetRunRecordsNoEmptyMessage: a preset agent that
// printed nothing leaves no empty message.assistant in its transcript.
func TestOnce_SilentPresetRunRecordsNoEmptyMessage(t *testing.T) {
	e := newEnv(t)
	e.useAgent("claude", fakeagent.Empty)
	e.onceFresh()
	e.write("note.md", "# Note\n")
	sum := e.onceFresh()
	if len(sum.Runs) != 1 || sum.Runs[0].Outcome != agentrun.OutcomeFailed {
		t.Fatalf("runs = %+v; want one failed run", sum.Runs)
	}
	events := runTranscript(t, e, sum.Runs[0].RunID)
	want := []transcript.Type{transcript.RunStarted, transcript.MessageUser, transcript.RunFinished, transcript.TieOffAppended}
	if got := eventTypes(events); !slices.Equal(got, want) {
		t.Errorf("transcript types = %v; want %v", got, want)
	}
}

// TestOnce_AgentNotStartedSaysSo: an agent whose program cannot be
// started (not found, not executable) gets a failure section that says
// so, and not that it "did not exit by itself".
func TestOnce_AgentNotStartedSaysSo(t *testing.T) {
	noExec := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\necho hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, program, want string }{
		{"not found", "knotd-no-such-agent", `The fake agent could not be started: exec: "knotd-no-such-agent": executable file not found in `},
		{"not executable", noExec, "The fake agent could not be started: fork/exec " + noExec + ": permission denied"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "not executable" && runtime.GOOS == "windows" {
				t.Skip("no execute permission on Windows")
			}
			e := newEnv(t)
			e.userConfig(fmt.Sprintf("default_agent: fake\nagents:\n  fake:\n    command: [%q]\n", tc.program))
			e.onceFresh()
			e.write("note.md", "# Note\n")
			if sum := e.onceFresh(); sum.Failed != 1 {
				t.Fatalf("summary = %+v; want one failed run", sum)
			}
			secs := e.sections("note.md")
			if len(secs) != 1 || !secs[0].Failed {
				t.Fatalf("sections = %+v; want one failed section", secs)
			}
			body := secs[0].Body
			if !strings.Contains(body, tc.want) || !strings.Contains(body, "- Exit status: none (the agent could not be started)") ||
				strings.Contains(body, "did not exit by itself") {
				t.Errorf("failure section:\n%s\nwant it to say %q, and that the agent could not be started", body, tc.want)
			}
		})
	}
}

// TestOnce_PlainOutputInTranscriptWhileRunning: a plain command agent's
// output is in its run's transcript while it still runs (what knotd
// status and the console's live view read). The fake waits, after
// printing its reply, until the test has seen it in the transcript; the
// tie-off section is the reply as before.
func TestOnce_PlainOutputInTranscriptWhileRunning(t *testing.T) {
	e := newEnv(t)
	gate := filepath.Join(t.TempDir(), "seen")
	e.userConfig(fmt.Sprintf("default_agent: fake\nagents:\n  fake:\n    command: [%q]\n    timeout: 30s\n    env: {%s: %q, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvGate, gate))
	e.onceFresh()
	e.write("note.md", "# Note\n")
	seen := make(chan bool, 1)
	stop := make(chan struct{})
	go func() {
		defer func() {
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Error(err)
			}
		}()
		deadline := time.After(20 * time.Second)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-deadline:
				seen <- false
				return
			case <-stop:
				seen <- false
				return
			case <-tick.C:
			}
			ids, _ := filepath.Glob(filepath.Join(e.runsDir(), "*"+transcript.Ext))
			for _, p := range ids {
				events, _, err := transcript.ReadRun(e.runsDir(), strings.TrimSuffix(filepath.Base(p), transcript.Ext))
				if err != nil {
					continue
				}
				for _, ev := range events {
					if ev.Type == transcript.RunFinished {
						seen <- false // the run ended before its output was seen
						return
					}
					if ev.Type != transcript.MessageAssistant {
						continue
					}
					if pl, err := ev.Payload(); err == nil && len(pl.(transcript.AssistantMessage).Blocks) > 0 &&
						strings.HasPrefix(pl.(transcript.AssistantMessage).Blocks[0].Text, "ECHO: ## Event Context") {
						seen <- true
						return
					}
				}
			}
		}
	}()
	sum := e.onceFresh()
	close(stop)
	if !<-seen {
		t.Errorf("the agent's output was not in the transcript while it ran")
	}
	secs := e.sections("note.md")
	if sum.OK != 1 || len(secs) != 1 || strings.TrimSpace(secs[0].Body) != "ECHO: ## Event Context" {
		t.Fatalf("summary %+v, sections %+v; want one ok run answered with the echo", sum, secs)
	}
}
