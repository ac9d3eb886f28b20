package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// TestOnce_ACPAgentUsesTheVaultAsItsFileSystem: a protocol: acp agent run
// by a pass reads and writes the vault's files through knotd's file
// system (the driver's client side and the vault's agentFS together). At
// edit its write lands in the vault; at read-only, or where the user keeps
// the file from agents (an ignore pattern), the write is refused and the
// vault is left as it was. Every call is in the run's transcript.
func TestOnce_ACPAgentUsesTheVaultAsItsFileSystem(t *testing.T) {
	for _, tc := range []struct {
		name, perm, extra string
		wantOut           bool
		wantReply         string
	}{
		{name: "edit", perm: "edit", wantOut: true, wantReply: "[write: ok]"},
		{name: "read-only", perm: "read-only", wantReply: "[write: the agent's permissions are read-only"},
		{name: "ignored", perm: "edit", extra: "ignore: [out.md]\n", wantReply: "is ignored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.userConfig(fmt.Sprintf("%sdefault_agent: acp\nagents:\n  acp:\n    command: [%q]\n    protocol: acp\n    permissions: %s\n    env: {%s: %s, %s: %q, %s: fs}\n",
				tc.extra, fakeagent.Program(t), tc.perm, fakeagent.EnvBehaviour, fakeagent.ACP, fakeagent.EnvState, e.state, fakeagent.EnvFail))
			e.onceFresh()
			e.write("in.md", "line 1\nline 2\n")
			sum := e.onceFresh()
			if sum.Ran != 1 || sum.Failed != 0 {
				t.Fatalf("runs = %+v; want one ok run", sum.Runs)
			}
			if tie := e.read("in.tieoff.md"); !strings.Contains(tie, "[read: line 1") || !strings.Contains(tie, tc.wantReply) {
				t.Errorf("tie-off:\n%s\nwant the read of in.md and %q", tie, tc.wantReply)
			}
			if e.exists("out.md") != tc.wantOut {
				t.Errorf("out.md written: %v; want %v", e.exists("out.md"), tc.wantOut)
			}
			if tc.wantOut && e.read("out.md") != "written by the agent\n" {
				t.Errorf("out.md = %q", e.read("out.md"))
			}
			b, err := os.ReadFile(filepath.Join(e.runsDir(), sum.Runs[0].RunID+".jsonl"))
			mustDo(t, err)
			for _, call := range []string{"fs/read_text_file", "fs/write_text_file"} {
				if !strings.Contains(string(b), call) {
					t.Errorf("the run's transcript has no %s call:\n%s", call, b)
				}
			}
		})
	}
}
