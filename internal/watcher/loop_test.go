package watcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/knotd/knotd/internal/ignore"
)

func TestWatcher_QuietPeriodExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, t.TempDir(), func(w *Watcher, _ *fakeBackend) { w.Quiet = 2 * time.Second })
		h.event("a.md", fsnotify.Write)
		if got := h.after(2*time.Second - time.Nanosecond); len(got) != 0 {
			t.Fatalf("hints 1ns before the quiet period ended = %v; want none", got)
		}
		if got := h.after(2 * time.Second); !slices.Equal(got, []Hint{{Path: "a.md"}}) {
			t.Fatalf("hints when the quiet period ends = %v; want [a.md]", got)
		}
		// A second event restarts the period from its own time.
		h.event("a.md", fsnotify.Create)
		time.Sleep(time.Second)
		h.event("a.md", fsnotify.Write)
		if got := h.after(5*time.Second - time.Nanosecond); len(got) != 0 {
			t.Fatalf("hints before the restarted quiet period ended = %v; want none", got)
		}
		if got := h.after(5 * time.Second); !slices.Equal(got, []Hint{{Path: "a.md"}}) {
			t.Fatalf("hints after the restarted quiet period = %v; want [a.md]", got)
		}
		h.stop()
	})
}

func TestWatcher_MaxWaitForContinuousWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, t.TempDir(), func(w *Watcher, _ *fakeBackend) {
			w.Quiet, w.MaxWait = 2*time.Second, 15*time.Second
		})
		for at := time.Duration(0); at < 20*time.Second; at += 400 * time.Millisecond {
			time.Sleep(time.Until(h.start.Add(at)))
			h.event("log.md", fsnotify.Write)
		}
		time.Sleep(time.Minute)
		got := h.recvSeen()
		// Writes at 0, 0.4s ... 19.6s: the first window closes at the max
		// wait (15s); the second starts at 15.2s and ends 2s after 19.6s.
		want := []seen{{15 * time.Second, Hint{Path: "log.md"}}, {21600 * time.Millisecond, Hint{Path: "log.md"}}}
		if !slices.Equal(got, want) {
			t.Fatalf("hints for a continuous writer = %v; want %v", got, want)
		}
		h.stop()
	})
}

func TestWatcher_ManyPaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, t.TempDir(), nil)
		const n = 2000
		var want []Hint
		for i := range n {
			p := fmt.Sprintf("n%04d.md", i)
			h.event(p, fsnotify.Create)
			h.event(p, fsnotify.Write)
			h.event(fmt.Sprintf("n%04d.png", i), fsnotify.Create) // filtered out
			want = append(want, Hint{Path: p})
		}
		if got := h.after(DefaultQuiet - time.Nanosecond); len(got) != 0 {
			t.Fatalf("%d hints before the quiet period; want none", len(got))
		}
		got := h.after(DefaultQuiet)
		if !slices.Equal(got, want) {
			t.Fatalf("got %d hints (first %v); want %d, one per .md file in order", len(got), got[:min(3, len(got))], n)
		}
		h.stop()
	})
}

func TestWatcher_TooManyPendingBecomesFullRescan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, t.TempDir(), func(w *Watcher, _ *fakeBackend) { w.maxPending = 10 })
		for i := range 50 {
			h.event(fmt.Sprintf("n%d.md", i), fsnotify.Write)
		}
		if got := h.after(DefaultQuiet); !slices.Equal(got, []Hint{fullRescan}) {
			t.Fatalf("hints after 50 paths with MaxPending 10 = %v; want [full rescan]", got)
		}
		h.stop()
	})
}

func TestWatcher_DropsChmodAndFilteredFiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, t.TempDir(), nil)
		h.event("a.md", fsnotify.Chmod)
		h.event("b.txt", fsnotify.Write)
		h.event(".obsidian/workspace.md", fsnotify.Write) // stray event inside an ignored folder
		h.event("c.md", fsnotify.Chmod|fsnotify.Write)
		if got := h.after(time.Minute); !slices.Equal(got, []Hint{{Path: "c.md"}}) {
			t.Fatalf("hints = %v; want only [c.md]", got)
		}
		h.stop()
	})
}

func TestWatcher_NewDirectoryIsWatchedThenWalked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		h := startFake(t, root, nil)
		// mkdir -p a/b/c and files written before any watch existed.
		mustWrite(t, filepath.Join(root, "a/b/c/x.md"), "x")
		mustWrite(t, filepath.Join(root, "a/top.md"), "x")
		mustWrite(t, filepath.Join(root, "a/pic.png"), "x")
		mustWrite(t, filepath.Join(root, "a/.obsidian/hidden.md"), "x")
		mustWrite(t, filepath.Join(root, "a/node_modules/m/readme.md"), "x")
		h.event("a", fsnotify.Create)
		got := h.after(DefaultQuiet)
		want := []Hint{{Path: "a/b/c/x.md"}, {Path: "a/top.md"}}
		if !slices.Equal(got, want) {
			t.Fatalf("hints after mkdir -p = %v; want %v", got, want)
		}
		if w := h.fb.watched(root); !slices.Equal(w, []string{".", "a", "a/b", "a/b/c"}) {
			t.Errorf("watched = %v; want [. a a/b a/b/c]", w)
		}
		if st := h.w.counts(); st.Watched != 4 || st.Polled != 0 {
			t.Errorf("Stats() = %+v; want 4 watched, 0 polled", st)
		}
		// The Create events for the subdirectories arrive late: nothing new.
		h.event("a/b", fsnotify.Create)
		h.event("a/b/c", fsnotify.Create)
		if got := h.after(2 * DefaultQuiet); len(got) != 0 {
			t.Errorf("hints after late Create events = %v; want none", got)
		}
		h.stop()
	})
}

func TestWatcher_RemovedDirectoryDropsWatchesAndRescans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		mustWrite(t, filepath.Join(root, "notes/deep/a.md"), "x")
		mustWrite(t, filepath.Join(root, "other/b.md"), "x")
		h := startFake(t, root, nil)
		if err := os.Rename(filepath.Join(root, "notes"), filepath.Join(root, "other/moved")); err != nil {
			t.Fatal(err)
		}
		h.event("notes", fsnotify.Rename)
		h.event("other/moved", fsnotify.Create)
		got := h.after(DefaultQuiet)
		want := []Hint{{Path: "notes", Dir: true}, {Path: "other/moved/deep/a.md"}}
		if !slices.Equal(got, want) {
			t.Fatalf("hints after a directory rename = %v; want %v", got, want)
		}
		if w := h.fb.watched(root); !slices.Equal(w, []string{".", "other", "other/moved", "other/moved/deep"}) {
			t.Errorf("watched = %v; want [. other other/moved other/moved/deep]", w)
		}
		if st := h.w.counts(); st.Watched != 4 {
			t.Errorf("Stats().Watched = %d; want 4", st.Watched)
		}
		h.stop()
	})
}

func TestWatcher_IgnoreFileChangeReloadsAndRescans(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		mustWrite(t, filepath.Join(root, "notes/.gitignore"), "drafts/\n")
		mustWrite(t, filepath.Join(root, "notes/drafts/d.md"), "x")
		mustWrite(t, filepath.Join(root, "notes/kept/k.md"), "x")
		h := startFake(t, root, func(w *Watcher, _ *fakeBackend) { w.Rules = &ignore.Rules{} })
		if w := h.fb.watched(root); !slices.Equal(w, []string{".", "notes", "notes/kept"}) {
			t.Fatalf("watched = %v; want [. notes notes/kept]", w)
		}
		h.event("notes/drafts/d.md", fsnotify.Write) // a stale event, if one came, is ignored
		mustWrite(t, filepath.Join(root, "notes/.gitignore"), "kept/\n")
		h.event("notes/.gitignore", fsnotify.Write)
		got := h.after(DefaultQuiet)
		if !slices.Equal(got, []Hint{{Path: "notes", Dir: true}}) {
			t.Fatalf("hints after .gitignore changed = %v; want [notes/ (subtree)]", got)
		}
		if w := h.fb.watched(root); !slices.Equal(w, []string{".", "notes", "notes/drafts"}) {
			t.Errorf("watched after reload = %v; want [. notes notes/drafts]", w)
		}
		if ign, why := h.w.Rules.Explain("notes/kept/k.md"); !ign {
			t.Errorf("Explain(notes/kept/k.md) = false, %q; want ignored after the reload", why)
		}
		h.stop()
	})
}

func TestWatcher_OverflowRescansAndResyncsWatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		h := startFake(t, root, nil)
		// A directory appears while the kernel queue overflows: its event is lost.
		mustWrite(t, filepath.Join(root, "lost/x.md"), "x")
		h.fb.errors <- fsnotify.ErrEventOverflow
		h.event("a.md", fsnotify.Write) // absorbed by the pending full rescan
		if got := h.after(DefaultQuiet); !slices.Equal(got, []Hint{fullRescan}) {
			t.Fatalf("hints after an overflow = %v; want [full rescan]", got)
		}
		if w := h.fb.watched(root); !slices.Equal(w, []string{".", "lost"}) {
			t.Errorf("watched after the rescan = %v; want [. lost]", w)
		}
		if !strings.Contains(h.logs.String(), "overflowed") {
			t.Errorf("logs do not mention the overflow:\n%s", h.logs)
		}
		h.stop()
	})
}

func TestWatcher_WatchLimitFallsBackToPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		mustWrite(t, filepath.Join(root, "a/old.md"), "x")
		mustMkdir(t, filepath.Join(root, "b"))
		mustMkdir(t, filepath.Join(root, "c"))
		h := startFake(t, root, func(w *Watcher, fb *fakeBackend) {
			w.pollInterval = 10 * time.Second
			fb.addErr = func(name string) error {
				if name != root && filepath.Base(name) != "c" {
					return fmt.Errorf("inotify_add_watch %s: %w", name, syscall.ENOSPC)
				}
				return nil
			}
		})
		if st := h.w.counts(); st.Watched != 2 || st.Polled != 2 {
			t.Fatalf("Stats() = %+v; want 2 watched (root, c), 2 polled (a, b)", st)
		}
		logs := h.logs.String()
		if n := strings.Count(logs, "level=ERROR"); n != 1 {
			t.Errorf("%d error lines about the limit; want exactly 1:\n%s", n, logs)
		}
		for _, want := range []string{"max_user_watches", "max_user_instances", "knotd watches 1 directories", "sysctl"} {
			if kqueueFDs || strings.Contains(logs, want) {
				continue
			}
			t.Errorf("limit message lacks %q:\n%s", want, logs)
		}
		// No events come from polled directories: polling finds the changes.
		mustWrite(t, filepath.Join(root, "a/new.md"), "x")
		mustWrite(t, filepath.Join(root, "a/old.md"), "longer")
		mustWrite(t, filepath.Join(root, "b/sub/deep.md"), "x")
		mustWrite(t, filepath.Join(root, "b/skip.png"), "x")
		if got := h.after(10*time.Second + DefaultQuiet - time.Nanosecond); len(got) != 0 {
			t.Fatalf("hints before the poll settled = %v; want none", got)
		}
		got := h.after(10*time.Second + DefaultQuiet)
		want := []Hint{{Path: "a/new.md"}, {Path: "a/old.md"}, {Path: "b/sub/deep.md"}}
		if !slices.Equal(got, want) {
			t.Fatalf("hints from polling = %v; want %v", got, want)
		}
		if st := h.w.counts(); st.Polled != 3 {
			t.Errorf("Stats().Polled = %d; want 3 (b/sub too)", st.Polled)
		}
		if err := os.RemoveAll(filepath.Join(root, "b")); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(root, "a/new.md")); err != nil {
			t.Fatal(err)
		}
		got = h.after(20*time.Second + DefaultQuiet)
		want = []Hint{{Path: "a/new.md"}, {Path: "b", Dir: true}}
		if !slices.Equal(got, want) {
			t.Fatalf("hints after removals seen by polling = %v; want %v", got, want)
		}
		if st := h.w.counts(); st.Polled != 1 || st.Watched != 2 {
			t.Errorf("Stats() = %+v; want 2 watched, 1 polled", st)
		}
		h.stop()
	})
}

func TestWatcher_NoKernelWatcherPollsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		root := t.TempDir()
		mustMkdir(t, filepath.Join(root, "notes"))
		h := startFake(t, root, func(w *Watcher, _ *fakeBackend) {
			w.pollInterval = time.Second
			w.newBackend = func() (backend, error) {
				return nil, fmt.Errorf("inotify_init1: %w", syscall.EMFILE)
			}
		})
		if st := h.w.counts(); st.Watched != 0 || st.Polled != 2 {
			t.Fatalf("Stats() = %+v; want 0 watched, 2 polled", st)
		}
		mustWrite(t, filepath.Join(root, "notes/n.md"), "x")
		if got := h.after(time.Second + DefaultQuiet); !slices.Equal(got, []Hint{{Path: "notes/n.md"}}) {
			t.Fatalf("hints = %v; want [notes/n.md]", got)
		}
		h.stop()
	})
}

func TestWatcher_RootRemovedEndsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startFake(t, t.TempDir(), nil)
		h.event("", fsnotify.Remove)
		if err := <-h.done; !errors.Is(err, errRootGone) {
			t.Fatalf("Run = %v; want errRootGone", err)
		}
		<-h.consumed // out was closed
		h.cancel()
	})
}

func TestWatcher_CancelWhileConsumerIsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fb := newFakeBackend()
		w := &Watcher{Root: t.TempDir(), newBackend: func() (backend, error) { return fb, nil }}
		ctx, cancel := context.WithCancel(t.Context())
		out := make(chan Hint) // nobody receives
		done := make(chan error)
		go func() { done <- w.Run(ctx, out) }()
		fb.events <- fsnotify.Event{Name: filepath.Join(w.Root, "a.md"), Op: fsnotify.Write}
		time.Sleep(time.Minute) // a.md settled; Run is blocked offering the first hint
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v; want nil", err)
		}
		if x, ok := <-out; ok {
			t.Fatalf("received %v after Run returned; want out closed", x)
		}
	})
}

func TestWatcher_BadConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	mustWrite(t, file, "x")
	tests := []struct {
		name string
		w    *Watcher
	}{
		{"missing root", &Watcher{Root: filepath.Join(dir, "nope")}},
		{"root is a file", &Watcher{Root: file}},
		{"negative quiet", &Watcher{Root: dir, Quiet: -time.Second}},
	}
	for _, tt := range tests {
		out := make(chan Hint)
		if err := tt.w.Run(t.Context(), out); err == nil {
			t.Errorf("%s: Run = nil; want an error", tt.name)
		}
		if _, ok := <-out; ok {
			t.Errorf("%s: out not closed", tt.name)
		}
	}
}
