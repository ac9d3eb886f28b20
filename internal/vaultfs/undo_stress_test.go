package vaultfs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/testutil"
)

// saveKinds are the ways of saving a note that the stress below races
// against knotd's replace.
var saveKinds = []string{"append", "truncate and write", "in place", "rename over", "sed -i"}

// saveAs saves buf into the note p the way kind says; for an append, line
// is what is appended (buf's last line).
func saveAs(p, kind string, buf, line []byte) error {
	switch kind {
	case "append": // >>
		return testutil.WriteInto(p, os.O_WRONLY|os.O_APPEND, line)
	case "truncate and write": // VS Code, a shell's >
		return os.WriteFile(p, buf, 0o644)
	case "in place": // write from the start, cut the rest
		return testutil.WriteInto(p, os.O_WRONLY, buf)
	case "rename over": // vim: a swap file renamed over the note
		tmp := filepath.Join(filepath.Dir(p), ".note.md.swp")
		if err := os.WriteFile(tmp, buf, 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, p)
	}
	// sed -i: a temporary file of a random name, renamed over the note.
	f, err := os.CreateTemp(filepath.Dir(p), "sed")
	if err != nil {
		return err
	}
	_, err = f.Write(buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// TestReplaceIfUnchanged_UndoLosesNoSave is the stress of the moments
// when knotd's replace must undo its exchange: round after round, knotd
// replaces the note while the editor saves it, by every way of saving, at
// the moments around the exchange that the test hooks single out: just
// before it (a save that makes knotd undo it), just after (a save renamed
// over knotd's new file, so that the undo has to exchange more than once),
// and just after one of the exchanges that undo it (when a save that is
// thrown away in the end, a newer one having replaced it, is at the name
// for a moment). A save that writes into the file (append, truncate and
// write, in place) may wait on knotd's leases, so it is the last of its
// round. After each round, once knotd settled its replace, every line the
// editor ever saved must be in the note. Before exchangeBack leased the
// saves it put back for a moment, an append or a write into one of them
// went with it. KNOT_STRESS (a Go duration) runs it long.
func TestReplaceIfUnchanged_UndoLosesNoSave(t *testing.T) {
	d, long := stressDuration(t)
	d /= 4
	if !exchangesHere(t) {
		t.Skip("no exchange on this system: nothing to undo")
	}
	leaseModes(t, func(t *testing.T, leases bool) {
		root, dir, _ := vault(t)
		p := filepath.Join(dir, "note.md")
		mustDo(t, os.WriteFile(p, []byte("line 0\n"), 0o644))
		seed := uint64(time.Now().UnixNano())
		if s := os.Getenv("KNOT_STRESS_SEED"); s != "" {
			_, err := fmt.Sscan(s, &seed)
			mustDo(t, err)
		}
		t.Logf("seed %d (KNOT_STRESS_SEED to repeat the same saves)", seed)
		rng := rand.New(rand.NewPCG(seed, 2))
		buf := []byte("line 0\n") // the editor's buffer: every line it saved
		lines := 0
		var history []string // the saves of the round, for a failure's message
		deadline := time.Now().Add(d)
		rounds, undone, twice := 0, 0, 0
		for r := 1; time.Now().Before(deadline) || r <= 600; r++ {
			rounds = r
			cur, err := os.ReadFile(p)
			mustDo(t, err)
			history = history[:0]
			var waits []func()
			pending := false // a save waits on a lease: nothing after it
			save := func(moment string, leased *os.File) {
				if pending {
					return
				}
				lines++
				line := []byte(fmt.Sprintf("line %d\n", lines))
				buf = append(buf, line...)
				kind := saveKinds[rng.IntN(len(saveKinds))]
				if moment != "back" && rng.IntN(4) != 0 {
					// Mostly a save by rename: what makes the undo
					// exchange more than once.
					kind = saveKinds[3+rng.IntN(2)]
				}
				history = append(history, moment+": "+kind)
				if strings.HasPrefix(kind, "rename") || kind == "sed -i" {
					mustDo(t, saveAs(p, kind, buf, line))
					return
				}
				pending = true
				waits = append(waits, inBackground(t, leased, func() error { return saveAs(p, kind, buf, line) }))
			}
			// Which moments of this round get a save: each hook fires
			// once a round (the replace that a Guard makes to put a save
			// back must not meet the same race again).
			atBefore, atAfter := rng.IntN(4) != 0, rng.IntN(2) == 0
			backStep := rng.IntN(3) // 0: none; else after that exchange of the undo
			steps := 0
			hooks := &exchangeHooks{noLeases: !leases}
			hooks.before = func(f0, _ *os.File) {
				if atBefore {
					atBefore = false
					save("before", f0)
				}
			}
			hooks.after = func(_, ours *os.File) {
				if atAfter {
					atAfter = false
					save("after", ours)
				}
			}
			hooks.back = func(pushed *os.File) {
				steps++
				if steps == 2 {
					twice++
				}
				if steps == backStep {
					save("back", pushed)
				}
			}
			g, err := ReplaceIfUnchanged(root, "note.md", cur, withHeader(cur, r), ReplaceOptions{NoSync: true, hooks: hooks})
			if err != nil && !errors.Is(err, ErrChanged) {
				t.Fatalf("round %d: %v (saves %v)", r, err, history)
			}
			if steps > 0 {
				undone++
			}
			for _, w := range waits {
				w()
			}
			if _, err := g.Settle(); err != nil {
				t.Fatalf("round %d: settle: %v (saves %v)", r, err, history)
			}
			got, err := os.ReadFile(p)
			mustDo(t, err)
			have := map[string]bool{}
			for _, l := range strings.SplitAfter(string(got), "\n") {
				have[l] = true
			}
			var missing []int
			for i := 0; i <= lines; i++ {
				if !have[fmt.Sprintf("line %d\n", i)] {
					missing = append(missing, i)
				}
			}
			if len(missing) > 0 {
				t.Fatalf("round %d lost lines %v (saves %v):\nnote:\n%q", r, missing, history, testutil.Tail(got))
			}
			// The editor reloads the note before it saves again.
			buf = append(buf[:0], body(got)...)
		}
		assertNoTemp(t, dir)
		if twice == 0 {
			t.Fatalf("in %d rounds no undo exchanged twice: the race did not happen", rounds)
		}
		t.Logf("%d rounds, %d saves, %d exchanges undone (%d of them more than once), 0 lines lost; long run: %v", rounds, lines, undone, twice, long)
	})
}

// exchangesHere reports whether this system and its temporary folder can
// exchange two files in one step.
func exchangesHere(t *testing.T) bool {
	dir := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(dir, "a"), nil, 0o644))
	mustDo(t, os.WriteFile(filepath.Join(dir, "b"), nil, 0o644))
	d, err := os.Open(dir)
	mustDo(t, err)
	defer d.Close() // read only
	ok, err := exchange(d, "a", "b")
	mustDo(t, err)
	return ok
}
