//go:build unix

package vault

import (
	"os"
	"syscall"
	"testing"
)

// TestOnce_SpecialFilesNamedLikeStrands: a FIFO, a symbolic link and a
// directory named *.md are not strands: knotd neither runs nor blocks on
// them, and serves the rest of the vault. A strand replaced by a symbolic
// link is gone.
func TestOnce_SpecialFilesNamedLikeStrands(t *testing.T) {
	e := newEnv(t)
	e.write("target.md", "# Target\n")
	e.write("replaced.md", "# Replaced\n")
	e.onceFresh()
	mustDo(t, syscall.Mkfifo(e.abs("fifo.md"), 0o644))
	mustDo(t, os.Symlink("target.md", e.abs("link.md")))
	mustDo(t, os.Symlink("/etc/passwd", e.abs("escape.md")))
	mustDo(t, os.Mkdir(e.abs("dir.md"), 0o755))
	e.remove("replaced.md")
	mustDo(t, os.Symlink("target.md", e.abs("replaced.md")))
	e.write("real.md", "# Real\n")
	sum := e.onceFresh()
	var got []string
	for _, r := range sum.Runs {
		got = append(got, r.Event.String()+" "+r.Strand)
	}
	if len(got) != 2 || got[0] != "Created real.md" || got[1] != "Deleted replaced.md" {
		t.Errorf("runs = %v; want [Created real.md Deleted replaced.md]", got)
	}
	for _, rel := range []string{"fifo", "link", "escape", "dir"} {
		if e.exists(rel + ".tieoff.md") {
			t.Errorf("%s.md got a tie-off", rel)
		}
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a later pass ran: %+v", sum.Runs)
	}
}
