package vault

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/strand"
	"github.com/knotd/knotd/tieoff"
)

// TestOnce_MergesATieOffsConflictCopy: a sync tool's conflict copy of a
// tie-off (two devices answered while apart) is merged into the tie-off,
// each section once, in order, and removed; nothing runs for it.
func TestOnce_MergesATieOffsConflictCopy(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("n.md", "# N\n")
	e.onceFresh()
	mine := e.read("n.tieoff.md")
	// The other device's tie-off: the same first section, then its own.
	other := newEnv(t)
	other.write("n.md", e.read("n.md"))
	mustDo(t, os.WriteFile(other.abs("n.tieoff.md"), []byte(mine), 0o644))
	other.onceFresh()
	other.write("n.md", e.read("n.md")+"\nedited on the other device\n")
	other.onceFresh()
	theirs := other.read("n.tieoff.md")
	e.write("n.md", other.read("n.md"))
	mustDo(t, os.WriteFile(e.abs("n.tieoff.sync-conflict-20261123-120000-ABCDEFG.md"), []byte(theirs), 0o644))

	sum, log := e.onceLogged()
	if sum.Ran != 0 {
		t.Errorf("runs = %v; want none: the copy's section answers the note", ran(sum))
	}
	if e.exists("n.tieoff.sync-conflict-20261123-120000-ABCDEFG.md") {
		t.Error("the conflict copy is still there")
	}
	if evs := e.events("n.md"); !slices.Equal(evs, []string{"Created", "Modified"}) {
		t.Errorf("tie-off = %v; want the first answer and the other device's, once each", evs)
	}
	if !strings.Contains(log, "merged a sync tool's conflict copy") {
		t.Errorf("the merge was not said:\n%s", log)
	}
}

// TestOnce_KeepsACopyItCannotPlace: a conflict copy holding text that is
// no section knotd can place is merged as far as it goes and kept, said
// once; a note's conflict copy is never run, and said once, also across
// restarts.
func TestOnce_KeepsACopyItCannotPlace(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("n.md", "# N\n")
	e.onceFresh()
	copyName := "n.tieoff (Ada's conflicted copy 2026-11-23).md"
	mustDo(t, os.WriteFile(e.abs(copyName), []byte("Ada's notes about the replies, not a section.\n\n"+e.read("n.tieoff.md")), 0o644))
	noteCopy := "n.sync-conflict-20261123-120000-ABCDEFG.md"
	e.write(noteCopy, "# N, as the other device had it\n")
	for pass := range 3 {
		sum, log := e.onceLogged()
		if sum.Ran != 0 {
			t.Errorf("pass %d ran %v", pass, ran(sum))
		}
		says := func(what string) int { return strings.Count(log, what) }
		wantOnce := 0
		if pass == 0 {
			wantOnce = 1
		}
		if n := says("a sync tool made a conflict copy of a note"); n != wantOnce {
			t.Errorf("pass %d said the note's copy %d times; want %d:\n%s", pass, n, wantOnce, log)
		}
		if n := says("holds text that is not a section knotd can place"); n != wantOnce {
			t.Errorf("pass %d said the tie-off's unplaceable copy %d times; want %d:\n%s", pass, n, wantOnce, log)
		}
	}
	if !e.exists(copyName) || !e.exists(noteCopy) {
		t.Error("a copy the user must look at was removed")
	}
	if _, ok := strand.StrandPath("n.tieoff.md"); !ok {
		t.Fatal("test setup")
	}
	r := e.vaultRoot()
	if secs, _, err := tieoff.Read(r, "n.tieoff.md"); err != nil || len(secs) != 1 {
		t.Errorf("tie-off = %d sections, %v; want its one section, nothing lost", len(secs), err)
	}
}
