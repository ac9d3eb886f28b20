package vault

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
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

// TestOnce_NoteConflictCopyOfKnotdsWrite: another device's save met
// knotd's write of a note's knot_session, lost as the older one, and
// Syncthing kept it in a conflict copy. When the copy holds every line of
// the note (the other device only added) and the note is as knotd left
// it, knotd folds the copy back: the note gets the other device's content
// with its knot_session, the copy goes, and the note runs on it. Any
// other copy stays, for the user, and the note is left as it is.
func TestOnce_NoteConflictCopyOfKnotdsWrite(t *testing.T) {
	const copyName = "a.sync-conflict-20261123-180000-ABCDEFG.md"
	for _, tc := range []struct {
		name       string
		conversing bool
		copyOf     func(note string) string // the copy, from the note knotd wrote
		editNote   bool                     // the user edited the note since knotd's run
		wantFold   bool
		// wantRemoved: the copy goes, the note stays as it is.
		wantRemoved bool
	}{
		{name: "the other device added a line", conversing: true, wantFold: true,
			copyOf: func(string) string { return "# A\n\nfirst\n\nadded on the other device\n" }},
		{name: "the other device added a line, with the same session", conversing: true, wantFold: true,
			copyOf: func(note string) string { return note + "\nadded on the other device\n" }},
		{name: "the other device deleted a line", conversing: true,
			copyOf: func(string) string { return "# A\n\nadded on the other device\n" }},
		{name: "the note was edited since", conversing: true, editNote: true,
			copyOf: func(string) string { return "# A\n\nfirst\n\nadded on the other device\n" }},
		{name: "knotd wrote nothing into the note", conversing: false,
			copyOf: func(string) string { return "# A\n\nfirst\n\nadded on the other device\n" }},
		{name: "the copy is the note without knotd's key", conversing: true, wantRemoved: true,
			copyOf: func(string) string { return "# A\n\nfirst\n" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.conversing {
				e.useConversing()
				e.writeSessions()
			}
			e.onceFresh()
			e.write("a.md", "# A\n\nfirst\n")
			e.onceFresh() // knotd writes the session (conversing), then runs
			note := e.read("a.md")
			cp := tc.copyOf(note)
			e.write(copyName, cp)
			if tc.editNote {
				note += "\nedited here\n"
				e.write("a.md", note)
			}
			sum := e.onceFresh()
			if tc.wantRemoved {
				if e.exists(copyName) || e.read("a.md") != note || sum.Ran != 0 {
					t.Errorf("copy there: %v, note changed: %v, runs: %+v; want the copy removed, nothing else", e.exists(copyName), e.read("a.md") != note, sum.Runs)
				}
				return
			}
			if !tc.wantFold {
				if !e.exists(copyName) || e.read(copyName) != cp {
					t.Error("the copy was changed or removed")
				}
				if e.read("a.md") != note {
					t.Errorf("the note was changed:\n%s", e.read("a.md"))
				}
				return
			}
			if e.exists(copyName) {
				t.Error("the copy is still there")
			}
			got := e.read("a.md")
			id := e.sessionOf("a.md")
			if id == "" || !strings.Contains(got, "added on the other device") || !strings.Contains(got, "first") {
				t.Errorf("the note after the fold:\n%s", got)
			}
			if sum.Ran != 1 || sum.Runs[0].Event.String() != "Modified" {
				t.Errorf("runs = %+v; want one Modified run on the folded note", sum.Runs)
			}
			if evs := e.events("a.md"); len(evs) != 2 {
				t.Errorf("tie-off events = %v; want the Created and the Modified", evs)
			}
		})
	}
}

// TestOnce_NoteConflictCopyOfKnotdsOwnWrite: the user types on one device
// while knotd, on another, writes the note's knot_session; the user's
// save wins and Syncthing keeps knotd's write (the older version and the
// key) as a conflict copy, on both devices. knotd knows what it wrote:
// the copy goes, said in the log (not as a warning), and the note runs
// once, on the user's content. A copy that holds a line the note lacks
// stays, said once.
func TestOnce_NoteConflictCopyOfKnotdsOwnWrite(t *testing.T) {
	const copyName = "n4.sync-conflict-20261123-180000-ABCDEFG.md"
	const newer = "# N4\n\nI think that the plan holds\n\nand a second thought\n" // the save that won, without the key
	for _, tc := range []struct {
		name     string
		copyOf   func(knotds string) string
		wantGone bool
	}{
		// The copy holds "I think th", which the winning save rewrote:
		// it goes from the vault and is kept in rescued/.
		{name: "knotd's write", wantGone: true, copyOf: func(k string) string { return k }},
		{name: "knotd's write, and a line only the copy has",
			copyOf: func(k string) string { return k + "\nwritten on knotd's device\n" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.userConfig("write_session: true\ndefault_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", "", fakeagent.Echo, "--session={session}"))
			e.onceFresh()
			e.write("n4.md", "# N4\n\nI think th\n")
			e.onceFresh() // knotd writes the session, then runs
			knotds := e.read("n4.md")
			if !strings.Contains(knotds, "knot_session:") {
				t.Fatalf("test setup: knotd wrote no knot_session:\n%s", knotds)
			}
			cp := tc.copyOf(knotds)
			e.write(copyName, cp)
			e.write("n4.md", newer)

			for pass := range 2 {
				sum, log := e.onceLogged()
				if pass == 0 && (sum.Ran != 1 || sum.Runs[0].Event != strand.Modified) {
					t.Errorf("runs = %+v; want one Modified run of the note", sum.Runs)
				}
				if pass == 1 && sum.Ran != 0 {
					t.Errorf("second pass ran %v; want nothing", ran(sum))
				}
				said := strings.Count(log, "a sync tool made a conflict copy of a note")
				removedSaid := strings.Count(log, "removed a sync tool's conflict copy of a note that is knotd's own write")
				switch {
				case tc.wantGone && (said != 0 || removedSaid != 1-pass):
					t.Errorf("pass %d: said as left %d times, as removed %d times; want it removed, said once as info:\n%s", pass, said, removedSaid, log)
				case tc.wantGone && strings.Contains(log, "level=WARN") && strings.Contains(log, copyName):
					t.Errorf("pass %d: the removal was a warning:\n%s", pass, log)
				case !tc.wantGone && (said != 1-pass || removedSaid != 0):
					t.Errorf("pass %d: said as left %d times, as removed %d times; want it left, said once:\n%s", pass, said, removedSaid, log)
				}
			}
			if e.exists(copyName) == tc.wantGone {
				t.Errorf("copy there: %v; want %v", e.exists(copyName), !tc.wantGone)
			}
			if !tc.wantGone && e.read(copyName) != cp {
				t.Error("the copy left to the user was changed")
			}
			if kept := e.rescued(); tc.wantGone && (len(kept) != 1 || !slices.Contains(slices.Collect(maps.Values(kept)), cp)) {
				t.Errorf("rescued = %v; want the removed copy, which holds a line the note lacks, kept there", kept)
			}
			if got := e.read("n4.md"); !strings.Contains(got, "# N4\n\nI think that the plan holds\n\nand a second thought\n") {
				t.Errorf("the note lost the user's save:\n%s", got)
			}
			calls := e.calls()
			if len(calls) != 2 || !strings.Contains(calls[1].Stdin, "and a second thought") {
				t.Errorf("agent calls = %d; want the first and one on the user's save", len(calls))
			}
		})
	}
}

// rescued returns the files in the rescued folder of the vault's state
// directory, by name.
func (e *env) rescued() map[string]string {
	e.t.Helper()
	dir := filepath.Join(e.folder().Dir, "rescued")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	mustDo(e.t, err)
	got := map[string]string{}
	for _, de := range entries {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		mustDo(e.t, err)
		got[de.Name()] = string(b)
	}
	return got
}
