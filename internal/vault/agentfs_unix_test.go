//go:build unix

package vault

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
)

// TestAgentFS_NotRegular: a FIFO is refused at once, read or written (an
// open would wait for a writer forever); a file with other hard links is
// replaced, not written through: the other names keep what they held.
func TestAgentFS_NotRegular(t *testing.T) {
	e, v, _ := agentFSEnv(t)
	mustDo(t, syscall.Mkfifo(e.abs("notes/fifo.md"), 0o644))
	e.write("notes/linked.md", "linked\n")
	mustDo(t, os.Link(e.abs("notes/linked.md"), e.abs("notes/other.md")))
	savedBeforeTheRun(t, e, "notes/linked.md")
	a := v.newAgentFS(agentrun.Agent{Permissions: agentrun.PermFull})
	defer a.Close()
	ctx := context.Background()
	tests := []struct {
		name, rel string
		write     bool
		wantErr   string
	}{
		{"read a FIFO", "notes/fifo.md", false, "refused: notes/fifo.md is not a regular file (a FIFO)"},
		{"write a FIFO", "notes/fifo.md", true, "refused: notes/fifo.md is not a regular file (a FIFO)"},
		{"write a hard-linked file", "notes/linked.md", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.write {
				err = a.WriteTextFile(ctx, e.abs(tt.rel), "agent\n")
			} else {
				_, err = a.ReadTextFile(ctx, e.abs(tt.rel), 0, 0)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("%v; want an error with %q", err, tt.wantErr)
			}
		})
	}
	if got := e.read("notes/linked.md"); got != "agent\n" {
		t.Fatalf("the hard-linked file holds %q", got)
	}
	if got := e.read("notes/other.md"); got != "linked\n" {
		t.Fatalf("its other name holds %q", got)
	}
}
