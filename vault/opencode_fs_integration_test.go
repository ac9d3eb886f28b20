//go:build unix

package vault

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/agentrun/agenttest"
)

// TestOpenCode_RealCLIWritesWithItsOwnToolToo pins what the real OpenCode
// CLI (opencode acp 1.18.33, the opencode preset at permissions: edit,
// against the loopback stand-in of the Anthropic API) does when its model
// writes side.txt, beside the note it answers, with its write tool. Once
// knotd grants the edit, OpenCode reads the file from the disk itself,
// sends the edited text through knotd's file system (fs/write_text_file,
// not awaited, its error ignored: writeProposedEdit in its ACP agent), and
// then lets its own write tool write the file as well. So the write
// reaches knotd's agentFS, which refuses it when the user saved the file
// at that moment (the file changed while the agent ran and OpenCode did
// not read it through knotd), but OpenCode's own write still replaces the
// file: knotd's file system cannot keep a user's save from OpenCode's
// edits (see README, the ACP presets). If a later OpenCode stops writing
// by itself, this test fails and the README can say more.
func TestOpenCode_RealCLIWritesWithItsOwnToolToo(t *testing.T) {
	bin := agenttest.OpenCode(t)
	kinds := []string{"sed -i", "append", "truncate and write", "in place"}
	for _, kind := range []int{-1, 2} { // no save; a save by truncate and write
		name := "no save"
		if kind >= 0 {
			name = kinds[kind]
		}
		t.Run(name, func(t *testing.T) {
			api := agenttest.NewAnthropic(t)
			e := newEnv(t)
			var env []string
			for _, kv := range api.OpenCodeEnv(t.TempDir(), "ask") {
				k, v, _ := strings.Cut(kv, "=")
				env = append(env, fmt.Sprintf("%s: %q", k, v))
			}
			e.userConfig(fmt.Sprintf("default_agent: o\nagents:\n  o:\n    preset: opencode\n    command: [%q]\n    permissions: edit\n    env: {%s}\n",
				bin, strings.Join(env, ", ")))
			e.write("side.txt", "user line 1\n")
			e.onceFresh() // knotd adopts the notes
			savedBeforeTheRun(t, e, "side.txt")
			e.write("in.md", "answer this\n")
			side := e.abs("side.txt")
			call := agenttest.ToolCall{ID: "toolu_side_write", Name: "write",
				Input: map[string]string{"filePath": side, "content": "the model's text\n"}}
			api.SetAnswer(agenttest.CallTool[agenttest.Request](call, func(agenttest.ToolResult) string { return "FINISHED" }))

			v := e.open()
			fsys := &savingFS{side: side}
			if kind >= 0 {
				fsys.saveAtWrite = func() error {
					return saveLine(side, []int{0, 1, 2, 3}[kind], "user line 2\n")
				}
			}
			v.agent = fsAgentWrap{inner: v.runner.Load(), wrap: func(fs agentrun.FileSystem) agentrun.FileSystem { fsys.inner = fs; return fsys }}
			sum, err := v.Once(context.Background(), OnceOptions{})
			mustDo(t, err)
			if sum.Ran != 1 || sum.Failed != 0 {
				t.Fatalf("runs = %+v; want one ok run", sum.Runs)
			}
			fsys.mu.Lock()
			defer fsys.mu.Unlock()
			if len(fsys.writes) != 1 {
				t.Fatalf("OpenCode wrote side.txt through knotd %d times; want once", len(fsys.writes))
			}
			got := e.read("side.txt")
			if kind < 0 {
				if fsys.writes[0] != nil || got != "the model's text\n" {
					t.Fatalf("without a save: the write %v, side.txt = %q; want the model's text written", fsys.writes[0], got)
				}
				return
			}
			if err := fsys.writes[0]; err == nil || !strings.Contains(err.Error(), "the user's save is kept") {
				t.Errorf("OpenCode's write through knotd: %v; want it refused, the user's save kept", err)
			}
			if got != "the model's text\n" {
				t.Errorf("side.txt = %q; want what OpenCode's own write tool wrote over the user's save (if OpenCode no longer writes by itself, the README's note on it is out of date)", got)
			}
		})
	}
}
