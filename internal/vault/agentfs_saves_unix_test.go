//go:build unix

package vault

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
)

// TestOnce_ACPAgentWriteKeepsTheUserSave: an ACP agent (the fake generic
// one, a real subprocess, at permissions: edit) edits side.txt, a file
// beside the note it answers, through knotd's fs/write_text_file, while
// the user saves the same file, by each way of saving, between the
// agent's read and its write. The agent's write is refused with a note
// that says why, and the user's save is kept whole: knotd never lets an
// agent's write replace a save the agent did not read. The agent read the
// file either through knotd (fs/read_text_file: knotd knows what it read)
// or, as agents with their own read tools do (OpenCode), from the disk
// itself: then knotd does not know what it read, and refuses a write of a
// file that changed while the agent ran. Without a save the write lands.
// Before knotd compared the file's change time with the run's start, the
// write of an agent that read the file itself replaced the user's save.
func TestOnce_ACPAgentWriteKeepsTheUserSave(t *testing.T) {
	kinds := []string{"sed -i", "append", "truncate and write", "in place"}
	for _, read := range []string{"fsedit", "fsblind"} {
		for kind := -1; kind < len(kinds); kind++ {
			name := "no save"
			if kind >= 0 {
				name = kinds[kind]
			}
			t.Run(map[string]string{"fsedit": "read through knotd", "fsblind": "read by the agent itself"}[read]+"/"+name, func(t *testing.T) {
				_, _, tie, got, want := gatedACPRun(t, read, kind)
				if kind < 0 {
					if !strings.Contains(tie, "[write: ok]") || got != want+"agent line\n" {
						t.Fatalf("without a save: side.txt = %q, tie-off:\n%s\nwant the agent's line added, and [write: ok]", got, tie)
					}
					return
				}
				if got != want {
					t.Errorf("side.txt = %q; want the user's save %q, whole and alone", got, want)
				}
				if !strings.Contains(tie, "[write: ") || strings.Contains(tie, "[write: ok]") || !strings.Contains(tie, "the user's save is kept") {
					t.Errorf("tie-off:\n%s\nwant the agent's write refused, saying the user's save is kept", tie)
				}
			})
		}
	}
}

// gatedACPRun runs the fake generic ACP agent (a real subprocess, at
// permissions: edit, in mode) on in.md, beside side.txt ("user line 1"),
// which was saved before the run started. The agent creates <gate>.read
// when it has read side.txt or is about to ask; then side.txt is saved by
// the way kind names ([-1]: no save), and the gate opens. It returns the
// run's summary, the tie-off, side.txt and what a save left there.
func gatedACPRun(t *testing.T, mode string, kind int) (e *env, sum Summary, tie, got, want string) {
	t.Helper()
	e = newEnv(t)
	gate := filepath.Join(t.TempDir(), "gate")
	e.userConfig(fmt.Sprintf("default_agent: acp\nagents:\n  acp:\n    command: [%q]\n    protocol: acp\n    permissions: edit\n    env: {%s: %s, %s: %q, %s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.ACP, fakeagent.EnvState, e.state, fakeagent.EnvFail, mode, fakeagent.EnvGate, gate))
	e.write("side.txt", "user line 1\n")
	e.onceFresh() // knotd adopts the notes
	savedBeforeTheRun(t, e, "side.txt")
	e.write("in.md", "answer this\n")
	v := e.open()
	type result struct {
		sum Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := v.Once(context.Background(), OnceOptions{})
		done <- result{sum, err}
	}()
	testutil.WaitFor(t, 30*time.Second, "the agent to read side.txt or ask to edit it", func() bool {
		_, err := os.Stat(gate + ".read")
		return err == nil
	})
	want = "user line 1\n"
	if kind >= 0 {
		mustDo(t, saveLine(e.abs("side.txt"), []int{0, 1, 2, 3}[kind], "user line 2\n"))
		want += "user line 2\n"
	}
	mustDo(t, os.WriteFile(gate, nil, 0o600))
	r := <-done
	mustDo(t, r.err)
	if r.sum.Ran != 1 || r.sum.Failed != 0 {
		t.Fatalf("runs = %+v; want one ok run", r.sum.Runs)
	}
	return e, r.sum, e.read("in.tieoff.md"), e.read("side.txt"), want
}

// TestOnce_ACPAgentEditPermissionKeepsTheUserSave: an ACP agent (the fake
// generic one, a real subprocess, at permissions: edit) asks permission to
// edit side.txt, a file beside the note it answers, and, when allowed,
// writes it with its own tool, as OpenCode does (it also sends the edit
// through fs/write_text_file, but writes the file itself whatever knotd
// answers). When the user saved side.txt, by any way of saving, after the
// run started and before the agent asked, knotd refuses the permission,
// the note of the run says why, and the user's save stays whole; a file
// untouched since before the run is allowed. Before knotd consulted its
// file system for an edit's permission, the edit was allowed at edit and
// the agent's own write replaced the user's save.
func TestOnce_ACPAgentEditPermissionKeepsTheUserSave(t *testing.T) {
	kinds := []string{"sed -i", "append", "truncate and write", "in place"}
	for kind := -1; kind < len(kinds); kind++ {
		name := "no save"
		if kind >= 0 {
			name = kinds[kind]
		}
		t.Run(name, func(t *testing.T) {
			e, sum, tie, got, want := gatedACPRun(t, "permedit", kind)
			if kind < 0 {
				if !strings.Contains(tie, "[permission: allow]") || got != want+"agent line\n" {
					t.Fatalf("without a save: side.txt = %q, tie-off:\n%s\nwant the edit allowed and the agent's line added", got, tie)
				}
				return
			}
			if got != want {
				t.Errorf("side.txt = %q; want the user's save %q, whole and alone", got, want)
			}
			if !strings.Contains(tie, "[permission: reject]") {
				t.Errorf("tie-off:\n%s\nwant the agent's edit refused", tie)
			}
			b, err := os.ReadFile(filepath.Join(e.runsDir(), sum.Runs[0].RunID+".jsonl"))
			mustDo(t, err)
			if !strings.Contains(string(b), "side.txt changed while the agent ran") {
				t.Errorf("the run's transcript:\n%s\nwant a note that says why the edit was refused", b)
			}
		})
	}
}
