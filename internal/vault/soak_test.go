package vault

import (
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
)

// soakBehaviour is the fake agent of the soak test: it fails, hangs past
// its timeout, is slow or replies at once, at random.
const soakBehaviour = "soak"

// soakSeedArg is the fake agent's argument that carries the soak's seed.
const soakSeedArg = "--soak-seed="

// soakVersion finds the version the soak wrote into a strand ("version
// N"); in a prompt that also shows the one before, the new one is last.
var soakVersion = regexp.MustCompile(`version (\d+)`)

func init() {
	fakes[soakBehaviour] = soakAgent
}

// soakAgent draws what it does from the soak's seed and the version of
// the strand it was asked about, so that a soak run again with the same
// seed gives each change the same fate.
func soakAgent(inv *fakeagent.Invocation) int {
	prompt, err := io.ReadAll(inv.Stdin)
	if err != nil {
		fmt.Fprintln(inv.Stderr, "soak:", err)
		return 125
	}
	var seed uint64
	for _, a := range inv.Args {
		if v, ok := strings.CutPrefix(a, soakSeedArg); ok {
			if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
				fmt.Fprintln(inv.Stderr, "soak:", err)
				return 125
			}
		}
	}
	var change uint64
	if m := soakVersion.FindAllSubmatch(prompt, -1); m != nil {
		change, _ = strconv.ParseUint(string(m[len(m)-1][1]), 10, 64)
	} else { // not a strand the soak wrote: its prompt, whole, names it
		h := fnv.New64a()
		h.Write(prompt)
		change = h.Sum64()
	}
	rng := rand.New(rand.NewPCG(seed, change))
	switch r := rng.IntN(100); {
	case r < 8:
		fmt.Fprintln(inv.Stderr, "soak: failing on purpose")
		return 3
	case r < 12:
		for {
			time.Sleep(time.Hour) // hangs until knotd's timeout kills it (select {} would be a deadlock the runtime reports)
		}
	case r < 40:
		time.Sleep(time.Duration(20+rng.IntN(130)) * time.Millisecond) // a slow agent, not a wait
	}
	fmt.Fprintln(inv.Stdout, "SOAK reply")
	return 0
}

// soakDuration is how long the soak test edits: KNOT_SOAK (a Go duration,
// for example 10m), 20s by default.
func soakDuration(t *testing.T) time.Duration {
	s := os.Getenv("KNOT_SOAK")
	if s == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("KNOT_SOAK=%q: %v", s, err)
	}
	return d
}

// soakSeed is the seed of all the soak's randomness: KNOT_SOAK_SEED, else a
// random one. It is logged, so that a failing soak can be run again with
// the same edits and the same agent's fates (the timing of knotd's
// goroutines is the machine's).
func soakSeed(t *testing.T) uint64 {
	t.Helper()
	seed := rand.Uint64()
	if s := os.Getenv("KNOT_SOAK_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("KNOT_SOAK_SEED=%q: %v", s, err)
		}
	}
	t.Logf("soak seed %d", seed)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("run it again with KNOT_SOAK_SEED=%d", seed)
		}
	})
	return seed
}

// openFDs counts this process's open file descriptors; -1 where /proc is
// not there to count them.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// soakHeapSlack is how much the live heap may grow over the soak (the
// harness drops its own records each round, so the heap is knotd's). The
// state store's pages are mmapped, not heap; what remains is bookkeeping
// for a few hundred strands. Measured: +150 KiB over 1,863 runs (90s),
// so a leak of even 1 KiB per run fails a 10-minute soak.
const soakHeapSlack = 4 << 20

// TestSoak_RandomEditsUnderFlakyAgent edits a few hundred strands at random
// in rounds, for KNOT_SOAK (20s by default), with an agent that sometimes
// fails, hangs past its timeout or is slow; the choices come from the
// seed KNOT_SOAK_SEED, random (and logged) when unset. Each round writes each chosen
// strand once (atomically, as editors do) and then waits until knotd has
// settled; that version is a settled change. At the end every strand has
// exactly one tie-off section per settled change, and goroutines, open
// files and the live heap are back to what they were.
func TestSoak_RandomEditsUnderFlakyAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak test is long; it is skipped with -short")
	}
	const strands = 300
	seed := soakSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	e := newEnv(t)
	conc := 4
	e.flags.Concurrency = &conc
	e.userConfig("default_agent: soak\nagents:\n" + e.fakeAgentYAML("soak", "", soakBehaviour, soakSeedArg+strconv.FormatUint(seed, 10)) + "    timeout: 1s\n")
	name := func(i int) string { return fmt.Sprintf("d%d/s%03d.md", i%7, i) }
	for i := range strands {
		e.write(name(i), "# strand "+strconv.Itoa(i)+"\n")
	}
	baseGoroutines, baseFDs := runtime.NumGoroutine(), openFDs()

	v, err := Open(e.root, e.options())
	if err != nil {
		t.Fatal(err)
	}
	w := e.watch(v, WatchOptions{})
	w.settle() // first contact: everything adopted, nothing ran

	settled := make([]int, strands) // settled changes per strand
	version := 0
	write := func(i int) {
		version++
		p := e.abs(name(i))
		tmp := filepath.Join(filepath.Dir(p), ".soak.tmp")
		mustDo(t, os.WriteFile(tmp, []byte(fmt.Sprintf("# strand %d\n\nversion %d\n", i, version)), 0o644))
		mustDo(t, os.Rename(tmp, p))
	}
	outcomes := map[agentrun.Outcome]int{}
	var heapStart uint64
	rounds, deadline := 0, time.Now().Add(soakDuration(t))
	for time.Now().Before(deadline) {
		chosen := map[int]bool{}
		for range 1 + rng.IntN(25) {
			chosen[rng.IntN(strands)] = true
		}
		for _, i := range slices.Sorted(maps.Keys(chosen)) { // a map's order is random, and not the seed's
			write(i)
			settled[i]++
		}
		w.settle()
		// The harness keeps every batch and report; drop them so that the
		// heap measures knotd, not the test.
		w.mu.Lock()
		for _, r := range w.reports {
			if r.Ran {
				outcomes[r.Outcome]++
			}
		}
		w.batches, w.atTurn, w.reports = nil, nil, nil
		w.mu.Unlock()
		rounds++
		if rounds == 3 { // warmed up: caches and pools have their size
			heapStart = heapInuse()
		}
	}
	heapEnd := heapInuse()
	mustDo(t, w.stop())
	mustDo(t, v.Close())

	total := 0
	runs := map[string]bool{}
	for i := range strands {
		secs := e.sections(name(i))
		if len(secs) != settled[i] {
			t.Errorf("%s: %d sections for %d settled changes", name(i), len(secs), settled[i])
		}
		for _, s := range secs {
			if s.Torn || runs[s.RunID] {
				t.Errorf("%s: torn or duplicated section of run %s", name(i), s.RunID)
			}
			runs[s.RunID] = true
		}
		total += settled[i]
	}
	t.Logf("%d rounds, %d settled changes, %d runs %v; heap in use %d KiB at round 3, %d KiB at the end",
		rounds, total, len(runs), outcomes, heapStart>>10, heapEnd>>10)
	if heapStart > 0 && heapEnd > heapStart+soakHeapSlack {
		t.Errorf("heap in use grew from %d KiB to %d KiB (slack %d KiB)", heapStart>>10, heapEnd>>10, soakHeapSlack>>10)
	}
	testutil.WaitFor(t, waitTimeout, "goroutines back to baseline", func() bool { return runtime.NumGoroutine() <= baseGoroutines })
	if baseFDs >= 0 {
		testutil.WaitFor(t, waitTimeout, "open files back to baseline", func() bool { return openFDs() <= baseFDs })
	}
}

// heapInuse returns the bytes of heap in use after a garbage collection.
func heapInuse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}
