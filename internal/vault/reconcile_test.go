package vault

import (
	"context"
	"crypto/sha256"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/testutil"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/watcher"
)

// overflowVault makes a processed vault, then changes it the way a burst
// whose events the kernel lost would: a modification, a deletion, a new
// strand, a touch, a move, a whole directory removed, a new directory.
// It returns the open vault and the strands a full reconcile must find.
func overflowVault(t *testing.T) (*env, *Vault, []string) {
	e := newEnv(t)
	e.onceFresh()
	for _, rel := range []string{"mod.md", "del.md", "touch.md", "same.md", "move.md", "sub/x.md", "sub/deep/y.md"} {
		e.write(rel, "# "+rel+"\n")
	}
	e.onceFresh() // every strand processed once, with a session

	e.write("mod.md", e.read("mod.md")+"changed\n")
	e.remove("del.md")
	e.write("new.md", "# new\n")
	later := time.Now().Add(time.Minute)
	mustDo(t, os.Chtimes(e.abs("touch.md"), later, later))
	e.rename("move.md", "moved/here.md")
	mustDo(t, os.RemoveAll(e.abs("sub")))
	e.write("fresh/dir/z.md", "# z\n")
	return e, e.open(), []string{"del.md", "fresh/dir/z.md", "mod.md", "new.md", "sub/deep/y.md", "sub/x.md"}
}

// TestReconcile_FullRescanFindsEverything: after an overflow the watcher
// asks for a full rescan; reconcile finds every strand that changed, was
// created or deleted, moves the moved one, and nothing else.
func TestReconcile_FullRescanFindsEverything(t *testing.T) {
	e, v, want := overflowVault(t)
	got, err := v.recon.Reconcile([]watcher.Hint{{Path: "same.md"}, {Dir: true}, {Path: "mod.md"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("reconcile(full) = %v; want %v", got, want)
	}
	if _, ok := record(t, v, "moved/here.md"); !ok || !e.exists("moved/here.tieoff.md") {
		t.Error("the moved strand's record and tie-off did not move")
	}
	// Reconciling again finds the same pending work and moves nothing.
	if again, err := v.recon.Reconcile([]watcher.Hint{{Dir: true}}); err != nil || !slices.Equal(again, want) {
		t.Errorf("second reconcile = %v, %v; want %v", again, err, want)
	}
}

// TestReconcile_DirectoryHint: a directory hint covers the directory's
// subtree on disk and in the records, and nothing outside it.
func TestReconcile_DirectoryHint(t *testing.T) {
	_, v, _ := overflowVault(t)
	got, err := v.recon.Reconcile([]watcher.Hint{{Path: "sub", Dir: true}, {Path: "fresh", Dir: true}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"fresh/dir/z.md", "sub/deep/y.md", "sub/x.md"}; !slices.Equal(got, want) {
		t.Errorf("reconcile(sub/, fresh/) = %v; want %v", got, want)
	}
}

// TestWatchLoop_OverflowRescanLosesNothing: the watch loop given a full
// rescan hint (what the watcher sends after fsnotify.ErrEventOverflow)
// runs every strand that changed while events were lost, once each.
func TestWatchLoop_OverflowRescanLosesNothing(t *testing.T) {
	e, v, want := overflowVault(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var ran, worked []string
	s, release := v.scheduler(ctx, func(RunReport) {})
	defer release()
	probeOf(v).workedFn = func(rel string, rep RunReport) {
		mu.Lock()
		defer mu.Unlock()
		worked = append(worked, rel)
		if rep.Ran {
			ran = append(ran, rel)
		}
	}
	runDone := make(chan error, 1)
	go func() { runDone <- s.Run(ctx) }()

	hints := make(chan watcher.Hint, 4)
	l := newLoop(v, s, time.Millisecond, nil, nil)
	loopDone := make(chan struct{})
	go func() { l.Run(hints); close(loopDone) }()
	hints <- watcher.Hint{Path: "new.md"}
	hints <- watcher.Hint{Dir: true} // the overflow
	testutil.WaitFor(t, waitTimeout, "every lost change to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(slices.Compact(slices.Sorted(slices.Values(worked)))) >= len(want)
	})
	close(hints)
	<-loopDone
	idle, stop := context.WithTimeout(ctx, waitTimeout)
	defer stop()
	if err := s.WaitIdle(idle); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-runDone
	mu.Lock()
	slices.Sort(ran)
	slices.Sort(worked)
	mu.Unlock()
	// A strand may be looked at twice (its file hint, then the rescan
	// before its run was committed); it runs once.
	if worked = slices.Compact(worked); !slices.Equal(worked, want) {
		t.Errorf("processed %v; want %v", worked, want)
	}
	// The strands of the deleted folder are recorded as deleted without
	// a run: their tie-offs went with the folder, which stays deleted.
	if want := []string{"del.md", "fresh/dir/z.md", "mod.md", "new.md"}; !slices.Equal(ran, want) {
		t.Errorf("runs = %v; want %v, once each", ran, want)
	}
	if e.exists("sub") {
		t.Error("knotd brought back a deleted folder")
	}
	if got := e.events("del.md"); !slices.Equal(got, []string{"Created", "Deleted"}) {
		t.Errorf("del.md: events %v", got)
	}
	if again, err := v.recon.Reconcile([]watcher.Hint{{Dir: true}}); err != nil || len(again) != 0 {
		t.Errorf("after the runs, reconcile = %v, %v; want nothing left", again, err)
	}
}

// TestReconcile_SameStampDifferentContent: a file system with coarse
// timestamps can give a strand saved twice within one tick, at the same
// size, the same stamp. A stamp recorded that close to the file's
// modification is not trusted, so the second save is still found.
func TestReconcile_SameStampDifferentContent(t *testing.T) {
	e := newEnv(t)
	e.write("a.md", "version one\n")
	info, err := os.Stat(e.abs("a.md"))
	mustDo(t, err)
	e.onceFresh() // adopted right after the write
	f, err := os.OpenFile(e.abs("a.md"), os.O_WRONLY, 0)
	mustDo(t, err)
	_, err = f.WriteString("version two\n") // same size, same inode
	mustDo(t, err)
	mustDo(t, f.Close())
	mustDo(t, os.Chtimes(e.abs("a.md"), info.ModTime(), info.ModTime())) // the same tick
	sum := e.onceFresh()
	if sum.Ran != 1 || sum.Runs[0].Event.String() != "Modified" {
		t.Errorf("summary = %+v; want the second save run as Modified", sum.Runs)
	}
}

// TestReconcile_RacyRestampWritesNothing: a hint for a strand whose
// content is as recorded, within the racy window, where the stamp to
// record is the one recorded (without its time), commits nothing: it is
// what follows each of knotd's own writes. Outside the window the stamp
// is recorded.
func TestReconcile_RacyRestampWritesNothing(t *testing.T) {
	tests := []struct {
		name      string
		age       time.Duration // of the file's modification time at the hint
		wantWrite bool
	}{
		{"within the racy window", 0, false},
		{"settled", time.Hour, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.onceFresh()
			e.write("a.md", "# a\n")
			e.onceFresh() // knotd writes knot_session, runs, records a stamp without time
			if tt.age > 0 {
				at := time.Now().Add(-tt.age)
				mustDo(t, os.Chtimes(e.abs("a.md"), at, at))
			}
			v := e.open()
			before := fileSum(t, e.statePath())
			got, err := v.recon.Reconcile([]watcher.Hint{{Path: "a.md"}})
			if err != nil || len(got) != 0 {
				t.Fatalf("reconcile = %v, %v; want nothing to run", got, err)
			}
			if wrote := fileSum(t, e.statePath()) != before; wrote != tt.wantWrite {
				t.Errorf("reconcile committed: %v; want %v", wrote, tt.wantWrite)
			}
		})
	}
}

// fileSum returns the SHA-256 of the file at path: a commit to the state
// store changes it (its meta page records the transaction).
func fileSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	mustDo(t, err)
	return sha256.Sum256(b)
}

// TestWatchLoop_FiredBy: the first full rescan of a watch is the
// catch-up, later ones are rescans, file hints are watch.
func TestWatchLoop_FiredBy(t *testing.T) {
	e := newEnv(t)
	e.write("a.md", "recorded")
	e.onceFresh()
	v := e.open()
	s := &scheduler.Scheduler[Job]{}
	hs := []watcher.Hint{{Dir: true}, {Path: "a.md"}, {Dir: true}}
	reconciled := make(chan struct{}, len(hs))
	probeOf(v).reconciledFn = func([]watcher.Hint, []string) { reconciled <- struct{}{} }
	hints := make(chan watcher.Hint)
	loopDone := make(chan error, 1)
	go func() { loopDone <- newLoop(v, s, time.Hour, nil, nil).Run(hints) }()
	defer func() {
		close(hints)
		if err := <-loopDone; err != nil {
			t.Errorf("loop: %v", err)
		}
	}()
	var got []agentrun.FiredBy
	for i, h := range hs {
		e.write("a.md", string(rune('a'+i)))
		hints <- h
		<-reconciled // the loop reconciled it alone: nothing else was sent
		// The job waits in the scheduler (it is not running): read it.
		snap := s.Snapshot()
		if len(snap) != 1 || snap[0].Key != "a.md" || snap[0].Running {
			t.Fatalf("scheduler holds %+v; want a.md waiting", snap)
		}
		got = append(got, snap[0].Job.FiredBy)
	}
	want := []agentrun.FiredBy{agentrun.FiredByCatchUp, agentrun.FiredByWatch, agentrun.FiredByRescan}
	if !slices.Equal(got, want) {
		t.Errorf("FiredBy = %v; want %v", got, want)
	}
}
