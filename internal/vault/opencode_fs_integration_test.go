//go:build unix

package vault

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/agents/opencode/opencodetest"
)

// TestOpenCode_RealCLIWritesWithItsOwnToolToo pins what the real OpenCode
// CLI (opencode acp 1.18.33, the opencode preset at permissions: edit,
// against the loopback stand-in of the Anthropic API) does when its model
// writes side.txt, beside the note it answers, with its write tool, and
// what knotd keeps of a save the user makes meanwhile.
//
// OpenCode asks permission for the edit first (session/request_permission).
// When the user saved side.txt after the run started and before OpenCode
// asks ("save before the ask"), knotd refuses the permission (its file
// system's MayEdit: the file changed while the agent ran); OpenCode then
// writes nothing and ends its turn, the run fails saying why, and the
// user's save stays.
//
// Once knotd grants the edit, OpenCode reads the file from the disk itself,
// sends the edited text through knotd's file system (fs/write_text_file,
// not awaited, its error ignored: writeProposedEdit in its ACP agent), and
// then lets its own write tool write the file as well. So a save the user
// makes between the grant and OpenCode's own write ("save at the write")
// reaches knotd's agentFS, which refuses OpenCode's write through it (the
// file changed while the agent ran and OpenCode did not read it through
// knotd), but OpenCode's own write still replaces the file: that window
// knotd cannot close (docs/agents.md). The test logs how wide it is. If a
// later OpenCode stops writing by itself, this test fails and the docs can
// say more.
func TestOpenCode_RealCLIWritesWithItsOwnToolToo(t *testing.T) {
	bin := opencodetest.OpenCode(t)
	for _, tc := range []struct {
		name           string
		atAsk, atGrant bool
	}{
		{name: "no save"},
		{name: "save before the ask", atAsk: true},
		{name: "save at the grant", atGrant: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := claudetest.NewAnthropic(t)
			e := newEnv(t)
			var env []string
			for _, kv := range opencodetest.Env(api, t.TempDir(), "ask") {
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
			api.SetAnswer(agenttest.CallTool[claudetest.Request](call, func(agenttest.ToolResult) string { return "FINISHED" }))

			v := e.open()
			fsys := &savingFS{side: side}
			save := func() error { return saveLine(side, 2, "user line 2\n") } // truncate and write
			if tc.atAsk {
				fsys.saveAtAsk = save
			}
			if tc.atGrant {
				fsys.saveAtGrant = save
			}
			v.agent = fsAgentWrap{inner: v.runner.Load(), wrap: func(fs agentrun.FileSystem) agentrun.FileSystem { fsys.inner = fs; return fsys }}
			// The window: from knotd's grant until OpenCode's own write
			// (the model's text on disk, which knotd refused to write).
			stop, own := make(chan struct{}), make(chan time.Time, 1)
			if tc.atGrant {
				go func() { own <- whenHolds(side, "the model's text\n", stop) }()
			}
			sum, err := v.Once(context.Background(), OnceOptions{})
			close(stop)
			mustDo(t, err)
			fsys.mu.Lock()
			defer fsys.mu.Unlock()
			got := e.read("side.txt")
			switch {
			case tc.atAsk:
				if got != "user line 1\nuser line 2\n" {
					t.Errorf("side.txt = %q; want the user's save, whole and alone", got)
				}
				if len(fsys.asks) != 1 || fsys.asks[0] == nil || !strings.Contains(fsys.asks[0].Error(), "the user's save is kept") {
					t.Fatalf("OpenCode's requests for permission: %v; want one, refused, the user's save kept", fsys.asks)
				}
				if len(fsys.writes) != 0 {
					t.Errorf("OpenCode wrote side.txt through knotd %d times after knotd refused the edit; want none", len(fsys.writes))
				}
				t.Logf("the run: %s: %s", sum.Runs[0].Outcome, sum.Runs[0].Reason)
				if sum.Ran != 1 || sum.Failed != 1 || !strings.Contains(sum.Runs[0].Reason, "refused to let it edit a file") {
					t.Errorf("runs = %+v; want one failed run that says knotd refused the edit", sum.Runs)
				}
				return
			case sum.Ran != 1 || sum.Failed != 0:
				t.Fatalf("runs = %+v; want one ok run", sum.Runs)
			case len(fsys.asks) != 1 || fsys.asks[0] != nil:
				t.Fatalf("OpenCode's requests for permission: %v; want one, granted", fsys.asks)
			case len(fsys.writes) != 1:
				t.Fatalf("OpenCode wrote side.txt through knotd %d times; want once", len(fsys.writes))
			}
			if !tc.atGrant {
				if fsys.writes[0] != nil || got != "the model's text\n" {
					t.Fatalf("without a save: the write %v, side.txt = %q; want the model's text written", fsys.writes[0], got)
				}
				return
			}
			// OpenCode does not wait for its write through knotd: when it
			// comes first, knotd refuses it; when it comes after OpenCode's
			// own write, the file holds what it writes already.
			if err := fsys.writes[0]; err != nil && !strings.Contains(err.Error(), "the user's save is kept") {
				t.Errorf("OpenCode's write through knotd: %v; want it refused, the user's save kept, or nothing to write", err)
			}
			if got != "the model's text\n" {
				t.Errorf("side.txt = %q; want what OpenCode's own write tool wrote over the user's save (if OpenCode no longer writes by itself, docs/agents.md's note on it is out of date)", got)
			}
			if at := <-own; !at.IsZero() {
				t.Logf("OpenCode's own write came %v after knotd granted the edit (its write through knotd %v after the grant: %v)",
					at.Sub(fsys.grantedAt), fsys.wroteAt.Sub(fsys.grantedAt), fsys.writes[0])
			}
		})
	}
}

// whenHolds polls the file p until it holds want, and returns when it
// first did (zero when stop closed first).
func whenHolds(p, want string, stop <-chan struct{}) time.Time {
	for {
		if b, err := os.ReadFile(p); err == nil && string(b) == want {
			return time.Now()
		}
		select {
		case <-stop:
			return time.Time{}
		case <-time.After(500 * time.Microsecond):
		}
	}
}
