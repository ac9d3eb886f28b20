package vault

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/transcript"
)

// What a turn's prompt carries follows the conversation (issue 24): a
// turn that continues the conversation which answered the note's previous
// version gets the change; every turn that starts one gets the whole note
// and the tie-off's newest sections.

// deltaNote is a note of about 6 KB: lines that appear nowhere else.
func deltaNote() string {
	var b strings.Builder
	b.WriteString("# Meeting\n\n")
	for i := range 85 {
		fmt.Fprintf(&b, "- point %02d of the meeting, with enough words to make a real line of notes\n", i)
	}
	return b.String()
}

const (
	wholeContext  = "Context: the whole note\n"
	changeContext = "Context: the change since your last answer\n"
	// bodyLine is a line of deltaNote far from its end, where the changes
	// are: a prompt that holds it holds the whole note.
	bodyLine = "- point 07 of the meeting"
)

// saveLine appends a line to note.md and runs a --once pass.
func (e *env) saveLine(line string) {
	e.t.Helper()
	e.write("note.md", e.read("note.md")+line+"\n")
	if sum := e.onceFresh(); sum.Ran != 1 || sum.OK != 1 {
		e.t.Fatalf("summary after saving %q = %+v; want one run that went through", line, sum)
	}
}

// wantWhole checks that prompt is a new conversation's: the whole note
// and the tie-off's newest sections (the fakes' replies).
func wantWhole(t *testing.T, what, prompt, extra string) {
	t.Helper()
	if !strings.Contains(prompt, wholeContext[:len(wholeContext)-1]+extra) || !strings.Contains(prompt, bodyLine) || !strings.Contains(prompt, "```markdown\n## Event:") {
		t.Errorf("%s: prompt is not the whole note with the tie-off's sections (want %q):\n%s", what, wholeContext[:len(wholeContext)-1]+extra, prompt)
	}
}

// wantChange checks that prompt continues the conversation: the change
// (added names the line added), neither the note nor the sections.
func wantChange(t *testing.T, what, prompt, added string) {
	t.Helper()
	if !strings.Contains(prompt, changeContext) || !strings.Contains(prompt, "\n+"+added+"\n") ||
		strings.Contains(prompt, bodyLine) || strings.Contains(prompt, "## Event:") ||
		!strings.Contains(prompt, "Previous tie-off:\n(already in this conversation") {
		t.Errorf("%s: prompt is not the change alone:\n%s", what, prompt)
	}
	for _, l := range []string{"Event: Modified\n", "Strand: note.md\n", "Previous tie-off:\n"} {
		if !strings.Contains(prompt, l) {
			t.Errorf("%s: prompt lacks the seed's line %q", what, l)
		}
	}
}

// TestOnce_ResumedTurnGetsTheChange: a turn that continues the
// conversation which answered the previous version gets the Event
// Context and the diff, not the note or the tie-off's sections; from
// turn 3 on, a one-line change to a 6 KB note costs a prompt of at most
// 2.5 KB. The first turn gets the whole note.
func TestOnce_ResumedTurnGetsTheChange(t *testing.T) {
	for _, tt := range []struct {
		name           string
		preset, behave string
		args           []string
		resumeFlag     string
	}{
		{name: "claude preset", preset: "claude", behave: fakeagent.Claude, resumeFlag: "--resume"},
		// A command that keeps its conversation under the session.
		{name: "session command", behave: fakeagent.Echo, args: []string{"--session={session}"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.useAgent(tt.preset, tt.behave, tt.args...)
			e.write("note.md", deltaNote())
			e.onceFresh()
			e.saveLine("turn one")
			e.saveLine("turn two")
			e.saveLine("turn three")
			calls := e.calls()
			if len(calls) != 3 {
				t.Fatalf("%d calls; want 3", len(calls))
			}
			if first := calls[0].Stdin; !strings.Contains(first, wholeContext) || !strings.Contains(first, bodyLine) || !strings.Contains(first, "Previous tie-off:\n(none)\n") {
				t.Errorf("turn 1: prompt is not the whole note:\n%s", first)
			}
			wantChange(t, "turn 2", calls[1].Stdin, "turn two")
			wantChange(t, "turn 3", calls[2].Stdin, "turn three")
			if tt.resumeFlag != "" && !slices.Contains(calls[2].Args, tt.resumeFlag) {
				t.Errorf("turn 3 args %q; want a resume", calls[2].Args)
			}
			if n := len(calls[2].Stdin); n > 2500 {
				t.Errorf("turn 3's prompt is %d bytes for a one-line change of a %d-byte note; want at most 2500", n, len(deltaNote()))
			}
			t.Logf("prompt sizes: turn 1 %d bytes, turn 2 %d, turn 3 %d (note %d bytes)", len(calls[0].Stdin), len(calls[1].Stdin), len(calls[2].Stdin), len(deltaNote()))
		})
	}
}

// TestOnce_NewConversationGetsTheWholeNote: every turn that does not
// continue the conversation which answered the previous version gets
// today's full prompt: after knotd reset, knot_session: new, an agent
// that lost its store (the retry), a switch of agent, an agent that
// keeps no conversation, and an agent whose resume_prompt is whole.
func TestOnce_NewConversationGetsTheWholeNote(t *testing.T) {
	twoAgents := func(e *env, extra string) {
		e.userConfig("default_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", "claude", fakeagent.Claude) + extra +
			e.fakeAgentYAML("other", "claude", fakeagent.Claude))
	}
	for _, tt := range []struct {
		name  string
		setup func(e *env)
		// before runs after turn 2, and returns the note's new content
		// for turn 3 ("" to append a line).
		before func(t *testing.T, e *env) string
	}{
		{name: "knotd reset", before: func(t *testing.T, e *env) string {
			v := e.open()
			_, err := v.ResetStrand("note.md")
			mustDo(t, err)
			e.close(v)
			return ""
		}},
		{name: "knot_session new", before: func(t *testing.T, e *env) string {
			return "---\nknot_session: new\n---\n" + e.read("note.md") + "turn three\n"
		}},
		{name: "agent lost its store", before: func(t *testing.T, e *env) string {
			mustDo(t, os.RemoveAll(filepath.Join(e.state, fakeagent.Claude)))
			return ""
		}},
		{name: "switch of agent", setup: func(e *env) { twoAgents(e, "") }, before: func(t *testing.T, e *env) string {
			return "---\nknot_agent: other\n---\n" + e.read("note.md") + "turn three\n"
		}},
		{name: "resume_prompt whole", setup: func(e *env) {
			e.userConfig("default_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", "claude", fakeagent.Claude) + "    resume_prompt: whole\n")
		}},
		{name: "no conversation", setup: func(e *env) { e.useAgent("", fakeagent.Echo) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.useAgent("claude", fakeagent.Claude)
			if tt.setup != nil {
				tt.setup(e)
			}
			e.write("note.md", deltaNote())
			e.onceFresh()
			e.saveLine("turn one")
			e.saveLine("turn two")
			next := ""
			if tt.before != nil {
				next = tt.before(t, e)
			}
			if next == "" {
				e.saveLine("turn three")
			} else {
				e.write("note.md", next)
				if sum := e.onceFresh(); sum.OK != 1 {
					t.Fatalf("turn 3: %+v; want a run that went through", sum)
				}
			}
			calls := e.calls()
			last := calls[len(calls)-1]
			wantWhole(t, "turn 3", last.Stdin, "")
			if !strings.Contains(last.Stdin, "turn three") {
				t.Errorf("turn 3's prompt lacks the new line:\n%s", last.Stdin)
			}
			if tt.name == "agent lost its store" {
				// The resume that failed had the change; its retry, in a
				// fresh conversation, the whole note.
				if len(calls) != 4 || !slices.Contains(calls[2].Args, "--resume") || slices.Contains(last.Args, "--resume") {
					t.Fatalf("calls %d, args %q then %q; want a failed resume and a fresh retry", len(calls), calls[2].Args, last.Args)
				}
				wantChange(t, "the failed resume", calls[2].Stdin, "turn three")
			}
		})
	}
}

// TestOnce_PastMaxContextStartsAConversation: once the context of the
// conversation passes max_context (the fake Claude's grows 1000 tokens a
// turn), the next turn starts a new one with the whole note, and the
// Event Context and the run's notes say why; the turn after continues
// the new one with the change. max_context: none never ends it.
func TestOnce_PastMaxContextStartsAConversation(t *testing.T) {
	for _, tt := range []struct {
		limit string
		fresh bool
	}{{"1500", true}, {"none", false}} {
		t.Run(tt.limit, func(t *testing.T) {
			e := newEnv(t)
			e.userConfig("default_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", "claude", fakeagent.Claude) + "    max_context: " + tt.limit + "\n")
			e.write("note.md", deltaNote())
			e.onceFresh()
			e.saveLine("turn one")
			e.saveLine("turn two") // the context holds 2000 tokens after it
			v := e.open()
			rec, _ := record(t, v, "note.md")
			e.close(v)
			if rec.ContextTokens != 2000 {
				t.Errorf("record's context after turn 2 = %d tokens; want 2000 (the last assistant message's input, cache reads and writes)", rec.ContextTokens)
			}
			e.saveLine("turn three")
			e.saveLine("turn four")
			calls := e.calls()
			if !tt.fresh {
				wantChange(t, "turn 3", calls[2].Stdin, "turn three")
				return
			}
			why := " (a new conversation: the last one used 2,000 tokens, past max_context 1,500)"
			wantWhole(t, "turn 3", calls[2].Stdin, why)
			if slices.Contains(calls[2].Args, "--resume") || !slices.Contains(calls[2].Args, "--session-id") {
				t.Errorf("turn 3 args %q; want a new conversation", calls[2].Args)
			}
			wantChange(t, "turn 4", calls[3].Stdin, "turn four")

			secs := e.sections("note.md")
			fin := payload[transcript.Finished](t, runTranscript(t, e, secs[len(secs)-2].RunID), transcript.RunFinished)
			if !slices.ContainsFunc(fin.Notes, func(n string) bool {
				return strings.Contains(n, "started a new conversation") && strings.Contains(n, "past max_context 1,500")
			}) {
				t.Errorf("turn 3's notes %q; want why a new conversation started", fin.Notes)
			}
		})
	}
}

// TestOnce_CodexPastMaxContextStartsAConversation: Codex CLI reports no
// context size, only the thread's running totals: the context of a turn
// is the turn's input (the fake Codex's turn k uses 1200·k), so after
// turn two (2,400 tokens) past max_context 2000 the next turn starts a
// new thread with the whole note, and says why; the turn after resumes
// the new thread with the change.
func TestOnce_CodexPastMaxContextStartsAConversation(t *testing.T) {
	e := newEnv(t)
	e.userConfig("default_agent: c\nagents:\n" + e.fakeAgentYAML("c", "codex", fakeagent.Codex) + "    max_context: 2000\n")
	e.write("note.md", deltaNote())
	e.onceFresh()
	e.saveLine("turn one")
	e.saveLine("turn two")
	v := e.open()
	rec, _ := record(t, v, "note.md")
	e.close(v)
	if rec.ContextTokens != 2400 {
		t.Errorf("record's context after turn 2 = %d tokens; want 2400 (the turn's input, not the thread's total 3600)", rec.ContextTokens)
	}
	e.saveLine("turn three")
	e.saveLine("turn four")
	calls := e.calls()
	if len(calls) != 4 {
		t.Fatalf("%d calls; want 4", len(calls))
	}
	wantChange(t, "turn 2", calls[1].Stdin, "turn two")
	wantWhole(t, "turn 3", calls[2].Stdin, " (a new conversation: the last one used 2,400 tokens, past max_context 2,000)")
	if slices.Contains(calls[2].Args, "resume") {
		t.Errorf("turn 3 args %q; want a new thread", calls[2].Args)
	}
	wantChange(t, "turn 4", calls[3].Stdin, "turn four")
	if !slices.Contains(calls[3].Args, "resume") {
		t.Errorf("turn 4 args %q; want the new thread resumed", calls[3].Args)
	}
	secs := e.sections("note.md")
	fin := payload[transcript.Finished](t, runTranscript(t, e, secs[len(secs)-2].RunID), transcript.RunFinished)
	if !slices.ContainsFunc(fin.Notes, func(n string) bool {
		return strings.Contains(n, "started a new conversation") && strings.Contains(n, "past max_context 2,000")
	}) {
		t.Errorf("turn 3's notes %q; want why a new conversation started", fin.Notes)
	}
}

// TestDryRun_ShowsTheChange: knotd --dry-run prints exactly the prompt
// the note would get: the change, for a turn that continues the
// conversation.
func TestDryRun_ShowsTheChange(t *testing.T) {
	e := newEnv(t)
	e.useAgent("claude", fakeagent.Claude)
	e.write("note.md", deltaNote())
	e.onceFresh()
	e.saveLine("turn one")
	e.write("note.md", e.read("note.md")+"turn two\n")
	var out bytes.Buffer
	mustDo(t, DryRun(context.Background(), e.root, e.options(), OnceOptions{}, &out))
	wantChange(t, "dry run", out.String(), "turn two")
	e.saveLine("turn three")
	if calls := e.calls(); len(calls) != 2 || !strings.Contains(out.String(), calls[1].Stdin[strings.Index(calls[1].Stdin, "Turn:"):strings.Index(calls[1].Stdin, "Changes:")]) {
		t.Errorf("dry run printed:\n%s\nwant the Event Context the run got", out.String())
	}
}
