package vaultfs

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/testutil"
)

// header is what the "knotd" side of these tests writes into a note: a
// first line of its own, as knotd writes its frontmatter key; everything
// after it is the user's.
const headerPrefix = "knot: "

// withHeader returns content with its header line set to n.
func withHeader(content []byte, n int) []byte {
	return append([]byte(fmt.Sprintf("%s%d\n", headerPrefix, n)), body(content)...)
}

// body returns content without its header line, if it has one.
func body(content []byte) []byte {
	if bytes.HasPrefix(content, []byte(headerPrefix)) {
		if i := bytes.IndexByte(content, '\n'); i >= 0 {
			return content[i+1:]
		}
		return nil
	}
	return content
}

func TestReplaceIfUnchanged(t *testing.T) {
	for _, exchange := range []bool{true, false} {
		t.Run(map[bool]string{true: "exchange", false: "no exchange"}[exchange], func(t *testing.T) {
			testReplaceIfUnchanged(t, ReplaceOptions{hooks: &exchangeHooks{noExchange: !exchange}})
		})
	}
}

func testReplaceIfUnchanged(t *testing.T, opts ReplaceOptions) {
	root, dir, _ := vault(t)
	p := filepath.Join(dir, "note.md")
	mustDo(t, os.Chmod(p, 0o600))
	g, err := ReplaceIfUnchanged(root, "note.md", []byte("note"), []byte("knot: 1\nnote"), opts)
	if err != nil {
		t.Fatalf("ReplaceIfUnchanged = %v", err)
	}
	if changed, err := g.Settle(); changed || err != nil {
		t.Errorf("Settle with nobody writing = %v, %v; want false, nil", changed, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "knot: 1\nnote" {
		t.Errorf("the note holds %q", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v; want the old 0600", fi.Mode().Perm())
	}
	assertNoTemp(t, dir)

	// Changed before: nothing replaced.
	if _, err := ReplaceIfUnchanged(root, "note.md", []byte("note"), []byte("x"), opts); !errors.Is(err, ErrChanged) {
		t.Errorf("ReplaceIfUnchanged of a changed file = %v; want ErrChanged", err)
	}
	if _, err := ReplaceIfUnchanged(root, "gone.md", []byte("note"), []byte("x"), opts); !errors.Is(err, ErrChanged) {
		t.Errorf("ReplaceIfUnchanged of a missing file = %v; want ErrChanged", err)
	}
	assertNoTemp(t, dir)
}

// leasesOn says whether the test running (see leaseModes) has leases, for
// inBackground, which runs in the tests' hooks. Test code only: the
// package itself learns it from ReplaceOptions.hooks.
var leasesOn = leasesHere

// leaseModes runs f with Linux leases, where this system has them, and
// without (what other systems do).
func leaseModes(t *testing.T, f func(t *testing.T, leases bool)) {
	for _, leases := range []bool{true, false} {
		name := map[bool]string{true: "leases", false: "no leases"}[leases]
		t.Run(name, func(t *testing.T) {
			if leases && !leasesHere {
				t.Skip("no file leases on this system")
			}
			saved := leasesOn
			leasesOn = leases
			t.Cleanup(func() { leasesOn = saved })
			f(t, leases)
		})
	}
}

// TestGuard_ASaveUnderWay: an editor that opened the note before knotd
// replaced it writes after. With leases knotd sees it has the note open
// for writing and replaces nothing; without, the save goes into the
// replaced file, and Settle puts it back.
func TestGuard_ASaveUnderWay(t *testing.T) {
	leaseModes(t, func(t *testing.T, leases bool) {
		for _, how := range []string{"truncate and write", "append", "write in place"} {
			t.Run(how, func(t *testing.T) {
				root, dir, _ := vault(t)
				p := filepath.Join(dir, "note.md")
				flag := os.O_WRONLY
				if how == "append" {
					flag |= os.O_APPEND
				}
				editor, err := os.OpenFile(p, flag, 0)
				mustDo(t, err)
				g, err := ReplaceIfUnchanged(root, "note.md", []byte("note"), []byte("knot: 1\nnote"), ReplaceOptions{hooks: &exchangeHooks{noLeases: !leases}})
				if leases {
					if !errors.Is(err, ErrChanged) {
						t.Fatalf("ReplaceIfUnchanged with the note open for writing = %v; want ErrChanged", err)
					}
				} else if err != nil {
					t.Fatal(err)
				}
				if how == "truncate and write" {
					mustDo(t, editor.Truncate(0)) // the editor's truncate lands after the replace
				}
				_, err = editor.WriteString("NOTE, saved late")
				mustDo(t, err)
				mustDo(t, editor.Close())
				want := map[string]string{"truncate and write": "NOTE, saved late", "append": "noteNOTE, saved late", "write in place": "NOTE, saved late"}[how]
				if !leases {
					changed, err := g.Settle()
					if err != nil || !changed {
						t.Fatalf("Settle = %v, %v; want the late save put back", changed, err)
					}
					if how == "append" {
						want = "knot: 1\n" + want // appended to what knotd wrote
					}
				}
				if b, _ := os.ReadFile(p); string(b) != want {
					t.Errorf("the note holds %q; want the late save %q", b, want)
				}
				assertNoTemp(t, dir)
			})
		}
	})
}

// TestGuard_Settle: what Settle makes of a save that went into the
// replaced file, and of what was saved at the name since.
func TestGuard_Settle(t *testing.T) {
	for _, tc := range []struct {
		name        string
		late        func(old *os.File) error // a save into the replaced file
		since       func(p string) error     // at the name, after it
		want        string
		wantChanged bool
		wantLate    bool
	}{
		{name: "nothing", want: "knot: 1\nnote"},
		{name: "an append", late: appendTo1("+late"), want: "knot: 1\nnote+late", wantChanged: true},
		{name: "a rewrite", late: rewrite("late"), want: "late", wantChanged: true},
		{name: "an append, then an append at the name", late: appendTo1("+late"), since: appendName("+since"),
			want: "knot: 1\nnote+late+since", wantChanged: true},
		{name: "a rewrite, then an append at the name", late: rewrite("late"), since: appendName("+since"),
			want: "late+since", wantChanged: true},
		{name: "a rewrite, then another", late: rewrite("late"), since: saveName("another"),
			want: "another", wantChanged: true, wantLate: true},
		{name: "a rewrite, then a save that holds it", late: rewrite("late"), since: saveName("late, and more"),
			want: "late, and more", wantChanged: true},
		{name: "an append, then a whole save", late: appendTo1("+late"), since: saveName("note+late and more"),
			want: "note+late and more", wantChanged: true},
		{name: "a rewrite, then the name is deleted", late: rewrite("late"), since: os.Remove,
			want: "", wantChanged: true, wantLate: true},
		{name: "an append, then the name is deleted", late: appendTo1("+late"), since: os.Remove,
			want: "", wantChanged: true, wantLate: true},
		{name: "an append of what knotd wrote only", since: appendName("+since"), want: "knot: 1\nnote+since"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, dir, _ := vault(t)
			p := filepath.Join(dir, "note.md")
			editor, err := os.OpenFile(p, os.O_RDWR, 0)
			mustDo(t, err)
			defer editor.Close()
			g, err := ReplaceIfUnchanged(root, "note.md", []byte("note"), []byte("knot: 1\nnote"), ReplaceOptions{hooks: &exchangeHooks{noLeases: true}}) // with leases the guard comes back settled
			mustDo(t, err)
			if tc.late != nil {
				mustDo(t, tc.late(editor))
			}
			if tc.since != nil {
				mustDo(t, tc.since(p))
			}
			changed, err := g.Settle()
			var late *LateSave
			if tc.wantLate {
				if !errors.As(err, &late) || !strings.HasSuffix(string(late.Content), "late") {
					t.Fatalf("Settle = %v; want a LateSave with the late save", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if changed != tc.wantChanged {
				t.Errorf("changed = %v; want %v", changed, tc.wantChanged)
			}
			b, _ := os.ReadFile(p)
			if string(b) != tc.want {
				t.Errorf("the note holds %q; want %q", b, tc.want)
			}
			if again, err2 := g.Settle(); again != changed || !errors.Is(err2, err) {
				t.Errorf("a second Settle = %v, %v; want the first one's %v, %v", again, err2, changed, err)
			}
			assertNoTemp(t, dir)
		})
	}
}

// TestGuard_PutBackErrorSettlesItsGuard: when the replace that puts a
// late save back fails after it had to undo its exchange, the Guard that
// comes with its error, over the file that was at the name for a moment,
// is settled, not dropped with that file open.
func TestGuard_PutBackErrorSettlesItsGuard(t *testing.T) {
	root, dir, _ := vault(t)
	editor, err := os.OpenFile(filepath.Join(dir, "note.md"), os.O_RDWR, 0)
	mustDo(t, err)
	defer editor.Close()
	hooks := &exchangeHooks{noLeases: true} // without leases an undone exchange leaves a Guard; the Guard passes them on to its put-back
	g, err := ReplaceIfUnchanged(root, "note.md", []byte("note"), []byte("knot: 1\nnote"), ReplaceOptions{hooks: hooks})
	mustDo(t, err)
	mustDo(t, appendTo1("+late")(editor))
	// The put-back's replace cannot look at what its exchange took away.
	var ours *os.File
	hooks.after = func(f0, o *os.File) {
		if ours == nil {
			ours = o
			_ = f0.Close()
		}
	}
	_, err = g.Settle()
	if ours == nil {
		t.Skip("no exchange on this system")
	}
	if err == nil || errors.Is(err, ErrChanged) {
		t.Fatalf("Settle = %v; want the put-back's error", err)
	}
	if _, serr := ours.Stat(); !errors.Is(serr, os.ErrClosed) {
		t.Errorf("the put-back's new file is still open (Stat: %v): its Guard was dropped unsettled", serr)
	}
	assertNoTemp(t, dir)
}

func appendTo1(s string) func(*os.File) error {
	return func(f *os.File) error {
		_, err := f.WriteAt([]byte(s), 4)
		return err
	}
}

func rewrite(s string) func(*os.File) error {
	return func(f *os.File) error {
		if err := f.Truncate(0); err != nil {
			return err
		}
		_, err := f.WriteAt([]byte(s), 0)
		return err
	}
}

func appendName(s string) func(string) error {
	return func(p string) error { return testutil.WriteInto(p, os.O_WRONLY|os.O_APPEND, []byte(s)) }
}

func saveName(s string) func(string) error {
	return func(p string) error { return os.WriteFile(p, []byte(s), 0o644) }
}

// TestGuard_RacesAtTheExchange: saves that land in the moments around
// the exchange, made to land there by test hooks.
func TestGuard_RacesAtTheExchange(t *testing.T) {
	rename := func(dir, content string) {
		mustDo(t, os.WriteFile(filepath.Join(dir, ".note.md.swp"), []byte(content), 0o644))
		mustDo(t, os.Rename(filepath.Join(dir, ".note.md.swp"), filepath.Join(dir, "note.md")))
	}
	for _, tc := range []struct {
		name          string
		leasesOnly    bool
		before, after func(t *testing.T, dir string, f0, ours *os.File) (wait func())
		// back: after the first exchange that undoes one, with the file
		// it pushed to the name.
		back        func(t *testing.T, dir string, pushed *os.File) (wait func())
		want        string
		wantChanged bool
	}{
		{
			name: "a save renamed over the note just before the exchange",
			before: func(t *testing.T, dir string, _, _ *os.File) func() {
				rename(dir, "a save by rename")
				return nil
			},
			want: "a save by rename", wantChanged: true,
		},
		{
			name: "a save renamed over the note before, another over knotd's just after",
			before: func(t *testing.T, dir string, _, _ *os.File) func() {
				rename(dir, "a save by rename")
				return nil
			},
			after: func(t *testing.T, dir string, _, _ *os.File) func() {
				rename(dir, "a newer save")
				return nil
			},
			want: "a newer save", wantChanged: true,
		},
		{
			name: "an append by name to knotd's file just after the exchange, undone",
			before: func(t *testing.T, dir string, _, _ *os.File) func() {
				rename(dir, "a save by rename")
				return nil
			},
			after: func(t *testing.T, dir string, _, ours *os.File) func() {
				return inBackground(t, ours, func() error {
					return testutil.WriteInto(filepath.Join(dir, "note.md"), os.O_WRONLY|os.O_APPEND, []byte("+appended"))
				})
			},
			want: "a save by rename+appended", wantChanged: true,
		},
		{
			name:       "a truncate and write that opened the note just before the exchange",
			leasesOnly: true,
			before: func(t *testing.T, dir string, f0, _ *os.File) func() {
				return inBackground(t, f0, func() error {
					return os.WriteFile(filepath.Join(dir, "note.md"), []byte("VS Code's save"), 0o644)
				})
			},
			want: "VS Code's save", wantChanged: true,
		},
		{
			// The exchange is undone twice: the first pushes the save
			// back to the name and pulls the newer one, the second
			// pushes that back and pulls the save again, which is then
			// thrown away as the newer one replaced it. But an append
			// opened it by name in between: that append is the user's
			// newest save, and must not go with it.
			name: "an append into a save put back for a moment, while knotd undoes its exchange twice",
			before: func(t *testing.T, dir string, _, _ *os.File) func() {
				rename(dir, "a save by rename")
				return nil
			},
			after: func(t *testing.T, dir string, _, _ *os.File) func() {
				rename(dir, "a newer save")
				return nil
			},
			back: func(t *testing.T, dir string, pushed *os.File) func() {
				return inBackground(t, pushed, func() error {
					return testutil.WriteInto(filepath.Join(dir, "note.md"), os.O_WRONLY|os.O_APPEND, []byte("+appended"))
				})
			},
			want: "a newer save+appended", wantChanged: true,
		},
		{
			name: "a rewrite in place of a save put back for a moment, while knotd undoes its exchange twice",
			before: func(t *testing.T, dir string, _, _ *os.File) func() {
				rename(dir, "a save by rename")
				return nil
			},
			after: func(t *testing.T, dir string, _, _ *os.File) func() {
				rename(dir, "a newer save")
				return nil
			},
			back: func(t *testing.T, dir string, pushed *os.File) func() {
				return inBackground(t, pushed, func() error {
					return testutil.WriteInto(filepath.Join(dir, "note.md"), os.O_WRONLY, []byte("the newest save"))
				})
			},
			want: "the newest save", wantChanged: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaseModes(t, func(t *testing.T, leases bool) {
				if tc.leasesOnly && !leases {
					t.Skip("without leases nothing tells of the save")
				}
				root, dir, _ := vault(t)
				var waits []func()
				// Each hook fires once: the replace a Guard makes to put
				// a save back must not meet the same race again.
				hook := func(f func(*testing.T, string, *os.File, *os.File) func()) func(*os.File, *os.File) {
					if f == nil {
						return nil
					}
					fired := false
					return func(f0, ours *os.File) {
						if fired {
							return
						}
						fired = true
						if w := f(t, dir, f0, ours); w != nil {
							waits = append(waits, w)
						}
					}
				}
				hooks := &exchangeHooks{before: hook(tc.before), after: hook(tc.after), noLeases: !leases}
				if tc.back != nil {
					fired := false
					hooks.back = func(pushed *os.File) {
						if !fired {
							fired = true
							if w := tc.back(t, dir, pushed); w != nil {
								waits = append(waits, w)
							}
						}
					}
				}
				if tc.back != nil {
					fired := false
					hooks.back = func(pushed *os.File) {
						if !fired {
							fired = true
							if w := tc.back(t, dir, pushed); w != nil {
								waits = append(waits, w)
							}
						}
					}
				}
				g, err := ReplaceIfUnchanged(root, "note.md", []byte("note"), []byte("knot: 1\nnote"), ReplaceOptions{hooks: hooks})
				if tc.wantChanged != errors.Is(err, ErrChanged) {
					t.Fatalf("ReplaceIfUnchanged = %v; want ErrChanged: %v", err, tc.wantChanged)
				}
				if err != nil && !errors.Is(err, ErrChanged) {
					t.Fatal(err)
				}
				for _, w := range waits {
					w()
				}
				if _, err := g.Settle(); err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(filepath.Join(dir, "note.md")); string(b) != tc.want {
					t.Errorf("the note holds %q; want %q", b, tc.want)
				}
				assertNoTemp(t, dir)
			})
		})
	}
}

// inBackground runs save in a goroutine, as another program would, and
// returns once it is over or, where leases tell, once it waits on the
// lease knotd holds on leased (its open breaks it); the function returned
// waits for its end.
func inBackground(t *testing.T, leased *os.File, save func() error) (wait func()) {
	done := make(chan error, 1)
	go func() { done <- save() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			return func() { mustDo(t, err) }
		default:
		}
		if leased == nil {
			// Nothing held back by a lease: wait for its end.
			err := <-done
			return func() { mustDo(t, err) }
		}
		if broken, _ := leaseBroken(leased); broken && leasesOn {
			return func() { mustDo(t, <-done) }
		}
		if time.Now().After(deadline) {
			t.Fatal("the save neither ended nor waited on the lease")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// stressDuration is how long the racing-saves stress runs: KNOT_STRESS
// (a Go duration), else a CI-sized run.
func stressDuration(t *testing.T) (time.Duration, bool) {
	if s := os.Getenv("KNOT_STRESS"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("KNOT_STRESS=%q: %v", s, err)
		}
		return d, true
	}
	return 4 * time.Second, false
}

// TestReplaceIfUnchanged_RacingSaves is the proof that knotd's writes into
// a note lose no save, whatever the save's strategy: an editor saves the
// note thousands of times (truncate and write like VS Code and a shell's
// >, append like >>, write in place, write a temporary file and rename it
// like vim and Syncthing) while knotd keeps writing its own first line
// into it. Every few saves both stop at a checkpoint, where the note must
// hold the editor's buffer (knotd's line aside) with every line ever
// saved: a save lost between two checkpoints is caught there, before a
// later whole-buffer save could hide it. knotd's side settles each write
// once the save that was under way at that moment is over: what knotd
// does at the end of a run, which lasts far longer than a save.
// KNOT_STRESS=10m runs it long.
func TestReplaceIfUnchanged_RacingSaves(t *testing.T) {
	d, long := stressDuration(t)
	leaseModes(t, func(t *testing.T, leases bool) { racingSaves(t, d, long, leases) })
}

// racingSaves: with leases, knotd's side reads the note whenever it likes,
// in the middle of a save too, and any number of saves may race one of
// its writes; the guard waits for what it must. Without leases nothing
// tells knotd that a save is under way: it reads the note between two
// saves (knotd reads a note once it has been quiet for a while), its write
// races the one save that comes next, and it settles once that save is
// over, before the next (knotd settles at the end of the run). A second
// save waits for the settle: two saves within the few system calls of one
// replace happen only when knotd is descheduled in their middle, and then,
// without leases, a save may be put back out of place (see docs/formats.md#what-knotd-writes-into-a-note).
func racingSaves(t *testing.T, d time.Duration, long, leases bool) {
	root, dir, _ := vault(t)
	p := filepath.Join(dir, "note.md")
	mustDo(t, os.WriteFile(p, []byte("line 0\n"), 0o644))
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KNOT_STRESS_SEED"); s != "" {
		_, err := fmt.Sscan(s, &seed)
		mustDo(t, err)
	}
	t.Logf("seed %d (KNOT_STRESS_SEED to repeat the same saves)", seed)

	var (
		saving sync.Mutex // held by the editor during each save
		// window, without leases: 1 while a knotd write is under way and
		// no save raced it yet, 2 once one did (the next save waits), 0
		// otherwise. Changed under saving.
		window      atomic.Int32
		stop        atomic.Bool
		saves       atomic.Int64
		writes      atomic.Int64
		refused     atomic.Int64
		restored    atomic.Int64
		checkpoints atomic.Int64
		wg          sync.WaitGroup
		errs        = make(chan error, 2)
		// checkpoint: the editor sends a channel; knotd, between two
		// writes, answers on it that it is idle and waits for it to close.
		checkpoint = make(chan chan struct{})
		knotdDone  = make(chan struct{})
		failed     atomic.Bool // knotd's side stopped on an error
	)
	editorBody := []byte("line 0\n") // the editor's buffer: what its last save wrote
	var kinds []string               // how each save was made, for a failure's message
	verify := func(n int) error {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if got := body(b); !bytes.Equal(got, editorBody) {
			lost := strings.Count(string(editorBody), "\n") - strings.Count(string(got), "\n")
			return fmt.Errorf("after save %d (%d knotd writes) the note lost a save (%d lines short):\nnote:\n%q\nwant:\n%q\nlast saves: %v",
				n, writes.Load(), lost, testutil.Tail(b), testutil.Tail(editorBody), kinds[max(0, len(kinds)-8):])
		}
		return nil
	}
	wg.Go(func() {
		defer stop.Store(true)
		rng := rand.New(rand.NewPCG(seed, 1))
		deadline := time.Now().Add(d)
		nextCheck := 1
		for i := 1; (time.Now().Before(deadline) || i < 300) && !failed.Load(); i++ {
			line := []byte(fmt.Sprintf("line %d\n", i))
			editorBody = append(editorBody, line...)
			saving.Lock()
			for !leases && window.Load() == 2 {
				saving.Unlock()
				time.Sleep(20 * time.Microsecond) // knotd settles: a poll, not a wait for an effect
				saving.Lock()
			}
			if window.Load() == 1 {
				window.Store(2)
			}
			var err error
			kind := rng.IntN(4)
			kinds = append(kinds, fmt.Sprintf("%d:%s", i, []string{"truncate", "append", "in place", "rename"}[kind]))
			switch kind {
			case 0: // truncate and write the whole buffer
				err = os.WriteFile(p, editorBody, 0o644)
			case 1: // append one line
				err = testutil.WriteInto(p, os.O_WRONLY|os.O_APPEND, line)
			case 2: // write the whole buffer in place, then cut what is left after it
				err = testutil.WriteInto(p, os.O_WRONLY, editorBody)
			default: // a temporary file renamed over the note
				tmp := filepath.Join(dir, ".note.md.swp")
				if err = os.WriteFile(tmp, editorBody, 0o644); err == nil {
					err = os.Rename(tmp, p)
				}
			}
			saving.Unlock()
			if err != nil {
				errs <- fmt.Errorf("save %d: %w", i, err)
				return
			}
			saves.Add(1)
			if i == nextCheck {
				nextCheck += 1 + rng.IntN(6)
				resume := make(chan struct{})
				select {
				case checkpoint <- resume:
				case <-knotdDone:
					return
				}
				err := verify(i)
				close(resume)
				if err != nil {
					errs <- err
					return
				}
				checkpoints.Add(1)
			}
			// Typing, or a sync tool's next file: two saves of one note come
			// at least a fifth of a millisecond apart, while knotd's writes
			// come back to back (each lasts some tens of microseconds).
			time.Sleep(200*time.Microsecond + time.Duration(rng.IntN(1800))*time.Microsecond)
		}
	})
	wg.Go(func() {
		defer close(knotdDone)
		defer func() {
			if t.Failed() || len(errs) > 0 {
				failed.Store(true)
			}
		}()
		for n := 1; !stop.Load(); n++ {
			select {
			case resume := <-checkpoint:
				<-resume
			default:
			}
			if !leases {
				saving.Lock()
				window.Store(1)
			}
			cur, err := os.ReadFile(p)
			if !leases {
				saving.Unlock()
			}
			if err != nil {
				errs <- err
				return
			}
			g, err := ReplaceIfUnchanged(root, "note.md", cur, withHeader(cur, n), ReplaceOptions{NoSync: true, hooks: &exchangeHooks{noLeases: !leases}})
			switch {
			case errors.Is(err, ErrChanged):
				refused.Add(1)
			case err != nil:
				errs <- fmt.Errorf("knotd's write %d: %w", n, err)
				return
			default:
				writes.Add(1)
			}
			saving.Lock() // the save under way, if any, is over
			if leases {
				saving.Unlock()
			}
			changed, err := g.Settle()
			if !leases {
				window.Store(0)
				saving.Unlock()
			}
			if err != nil {
				errs <- fmt.Errorf("settle %d: %w", n, err)
				return
			}
			if changed {
				restored.Add(1)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustDo(t, verify(int(saves.Load())))
	if writes.Load() == 0 || saves.Load() < 300 {
		t.Fatalf("%d saves, %d knotd writes: the race did not happen", saves.Load(), writes.Load())
	}
	assertNoTemp(t, dir)
	t.Logf("%d saves raced %d knotd writes (%d refused as changed, %d late saves put back), %d checkpoints, 0 lost; long run: %v",
		saves.Load(), writes.Load(), refused.Load(), restored.Load(), checkpoints.Load(), long)
}
