//go:build unix

package vault

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/testutil"
)

// TestWatch_RacingSavesLoseNoLine is the proof that no save is lost while
// knotd watches notes that other programs keep saving, whatever their way
// of saving: one writer per note appends numbered lines, each save made
// at random as `sed -i '$a line N'` does (read the note, write a
// temporary file, rename it over the note), as `>>` does (append), as VS
// Code does (read, truncate, write the whole) or in place (read, write
// the whole from the start, cut the rest), while knotd runs each note,
// with an agent that keeps a conversation, as often as its quiet period
// lets it. At the end every line each writer wrote is in its note, and,
// knotd writing nothing into notes by default, the note is exactly what
// its writer saved.
//
// knotd's own write of knot_session (write_session: true) cannot be made
// safe against a save that reads the note and renames over it: whatever
// knotd puts at the note's name was computed from a version read before,
// and while it undoes a write that a save got under, a reader may build
// its save on knotd's version, which lacks that save (see
// docs/formats.md#what-knotd-writes-into-a-note). Before knotd stopped writing sessions by
// default, this test lost 9 to 28 of 2,400 to 4,300 lines a run (six
// runs, with and without -race; issue 22). KNOT_STRESS_WRITE_SESSION=1
// runs it with write_session: true to measure what that risk still is (it
// fails when a line is lost): with the key written once per note, before
// its first run, 1 to 9 of 2,800 to 4,600 lines a run (six runs). The
// vaultfs test
// seams that turn leases and the exchange off change nothing here: by
// default knotd makes no write they could guard, so the test holds
// without them as well (internal/vaultfs's TestReplaceIfUnchanged_RacingSaves
// races knotd's write itself, with and without them). KNOT_STRESS (a Go
// duration) runs it long.
func TestWatch_RacingSavesLoseNoLine(t *testing.T) {
	d := 3 * time.Second
	if s := os.Getenv("KNOT_STRESS"); s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			t.Fatalf("KNOT_STRESS=%q: %v", s, err)
		}
	}
	writes := os.Getenv("KNOT_STRESS_WRITE_SESSION") == "1"
	const notes, maxLines = 12, 5000
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KNOT_STRESS_SEED"); s != "" {
		_, err := fmt.Sscan(s, &seed)
		mustDo(t, err)
	}
	t.Logf("seed %d (KNOT_STRESS_SEED to repeat the same saves), write_session: %v", seed, writes)

	e := newEnv(t)
	debounce, maxWait := 2*time.Millisecond, 10*time.Millisecond
	e.flags.Debounce, e.flags.MaxWait = &debounce, &maxWait
	// The agent: echo, handed the note's session, so that it keeps a
	// conversation; a program that starts in a millisecond, so that
	// knotd runs each note many times while it is saved.
	echo, err := exec.LookPath("echo")
	if err != nil {
		t.Skip("no echo:", err)
	}
	cfg := fmt.Sprintf("default_agent: echo\nagents:\n  echo:\n    command: [%q, \"{session}\"]\n", echo)
	if writes {
		cfg = "write_session: true\n" + cfg
	}
	e.userConfig(cfg)
	rels := make([]string, notes)
	for i := range rels {
		rels[i] = fmt.Sprintf("n%02d.md", i)
		e.write(rels[i], fmt.Sprintf("# Note %d\n\n", i))
	}
	v := e.open()
	w := e.watch(v, WatchOptions{})

	kinds := []string{"rename", "append", "truncate", "in place"}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		want    = make([][]byte, notes) // what each writer saved, in order
		written = make([]int, notes)
		byKind  [4]atomic.Int64
	)
	// The writers save for d, and, on a machine so loaded that knotd has
	// not run each note once by then, on until it has, for at most 30s.
	deadline, last := time.Now().Add(d), time.Now().Add(max(d, 30*time.Second))
	saving := func() bool {
		now := time.Now()
		return now.Before(deadline) || now.Before(last) && len(w.runs()) < notes
	}
	for n, rel := range rels {
		p := e.abs(rel)
		want[n] = []byte(fmt.Sprintf("# Note %d\n\n", n))
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(n)))
			for i := 1; i <= maxLines && saving(); i++ {
				line := fmt.Sprintf("n%02d line %d\n", n, i)
				kind := rng.IntN(8) // rename saves half of the time
				if kind > 3 {
					kind = 0
				}
				if err := saveLine(p, kind, line); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: save %d (%s): %w", rel, i, kinds[kind], err))
					mu.Unlock()
					return
				}
				want[n] = append(want[n], line...)
				written[n] = i
				byKind[kind].Add(1)
				// Typing, a script's next command: a fifth of a
				// millisecond to two between two saves of one note.
				time.Sleep(200*time.Microsecond + time.Duration(rng.IntN(1800))*time.Microsecond)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	ranWhileSaving := len(w.runs())
	w.settle()
	mustDo(t, w.stop())

	lost, total := 0, 0
	for n, rel := range rels {
		got := []byte(e.read(rel))
		have := map[string]bool{}
		for _, l := range strings.SplitAfter(string(got), "\n") {
			have[l] = true
		}
		var missing []int
		for i := 1; i <= written[n]; i++ {
			if !have[fmt.Sprintf("n%02d line %d\n", n, i)] {
				missing = append(missing, i)
			}
		}
		total += written[n]
		lost += len(missing)
		if len(missing) > 0 {
			t.Errorf("%s lost %d of its %d lines: %v", rel, len(missing), written[n], missing)
		} else if !writes && !bytes.Equal(got, want[n]) {
			t.Errorf("%s is not what its writer saved:\n%q\nwant:\n%q", rel, testutil.Tail(got), testutil.Tail(want[n]))
		}
	}
	t.Logf("%d saves of %d notes (rename %d, append %d, truncate %d, in place %d), %d runs while saving: %d lines lost",
		total, notes, byKind[0].Load(), byKind[1].Load(), byKind[2].Load(), byKind[3].Load(), ranWhileSaving, lost)
	if ranWhileSaving < notes {
		t.Fatalf("knotd ran %d times while the notes were saved: the race did not happen", ranWhileSaving)
	}
}

// saveLine appends line to the note p the way kind says: 0 reads it, writes a
// temporary file beside it and renames that over it (sed -i); 1 appends
// (>>); 2 reads it, truncates it and writes the whole (VS Code); 3 reads
// it and writes the whole in place, cutting what is left after it.
func saveLine(p string, kind int, line string) error {
	if kind == 1 {
		return testutil.WriteInto(p, os.O_WRONLY|os.O_APPEND, []byte(line))
	}
	cur, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	next := append(cur, line...)
	switch kind {
	case 2:
		return testutil.WriteInto(p, os.O_WRONLY|os.O_TRUNC, next)
	case 3:
		return testutil.WriteInto(p, os.O_WRONLY, next)
	}
	f, err := os.CreateTemp(filepath.Dir(p), "sed")
	if err != nil {
		return err
	}
	_, err = f.Write(next)
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
