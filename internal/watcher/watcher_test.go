package watcher

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// These tests use the real kernel watcher. They wait on conditions with a
// deadline, never for a fixed time.

const kernelDeadline = 20 * time.Second

// recordingBackend wraps fsnotify, records every Add, and can refuse some.
type recordingBackend struct {
	backend
	addErr func(name string) error

	mu   sync.Mutex
	adds []string
}

func (r *recordingBackend) Add(name string) error {
	r.mu.Lock()
	r.adds = append(r.adds, name)
	r.mu.Unlock()
	if r.addErr != nil {
		if err := r.addErr(name); err != nil {
			return err
		}
	}
	return r.backend.Add(name)
}

func (r *recordingBackend) added() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.adds)
}

// kernel runs a Watcher on the real file system and collects its hints.
type kernel struct {
	t    *testing.T
	root string
	w    *Watcher
	rb   *recordingBackend
	logs *testutil.Buffer

	mu      sync.Mutex
	seen    map[Hint]int
	listing *Listing      // the last one a full rescan carried
	changed chan struct{} // closed and replaced on every new hint
}

func startKernel(t *testing.T, root string, configure func(*Watcher, *recordingBackend)) *kernel {
	t.Helper()
	k := &kernel{t: t, root: root, logs: &testutil.Buffer{}, seen: make(map[Hint]int), changed: make(chan struct{})}
	k.rb = &recordingBackend{}
	k.w = &Watcher{
		Root:    root,
		Quiet:   50 * time.Millisecond,
		MaxWait: time.Second,
		Filter:  isMD,
		Rules:   &ignore.Rules{},
		Logger:  slog.New(slog.NewTextHandler(k.logs, nil)),
		newBackend: func() (backend, error) {
			b, err := newFsnotifyBackend()
			k.rb.backend = b
			return k.rb, err
		},
	}
	if configure != nil {
		configure(k.w, k.rb)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Hint)
	done := make(chan error, 1)
	go func() { done <- k.w.Run(ctx, out) }()
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for h := range out {
			k.mu.Lock()
			if h.Listing != nil {
				k.listing = h.Listing
			}
			h.Listing = nil // so that hints compare with ==
			k.seen[h]++
			close(k.changed)
			k.changed = make(chan struct{})
			k.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v; want nil", err)
			}
		case <-time.After(kernelDeadline):
			t.Errorf("Run did not return %v after cancellation", kernelDeadline)
		}
		<-consumed
	})
	k.waitFor("the initial full rescan", func(seen map[Hint]int) bool { return seen[fullRescan] > 0 })
	return k
}

// waitFor waits until cond holds for the hints seen so far, or fails the
// test at the deadline.
func (k *kernel) waitFor(what string, cond func(seen map[Hint]int) bool) {
	k.t.Helper()
	deadline := time.NewTimer(kernelDeadline)
	defer deadline.Stop()
	for {
		k.mu.Lock()
		ok, changed := cond(k.seen), k.changed
		k.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			k.mu.Lock()
			defer k.mu.Unlock()
			k.t.Fatalf("no %s within %v; hints seen: %v\nlogs:\n%s", what, kernelDeadline, k.seen, k.logs)
		}
	}
}

// waitHints waits until each path has had at least one more file hint
// than it had when mark was taken.
func (k *kernel) waitHints(mark map[Hint]int, paths ...string) {
	k.t.Helper()
	k.waitFor(fmt.Sprintf("hints for %v", paths), func(seen map[Hint]int) bool {
		for _, p := range paths {
			if seen[Hint{Path: p}] <= mark[Hint{Path: p}] {
				return false
			}
		}
		return true
	})
}

func (k *kernel) mark() map[Hint]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	m := make(map[Hint]int, len(k.seen))
	for h, n := range k.seen {
		m[h] = n
	}
	return m
}

func (k *kernel) path(rel string) string { return filepath.Join(k.root, filepath.FromSlash(rel)) }

func TestWatcher_Kernel_FileLifecycle(t *testing.T) {
	k := startKernel(t, t.TempDir(), nil)
	m := k.mark()
	mustWrite(t, k.path("a.md"), "one")
	k.waitHints(m, "a.md")

	m = k.mark()
	f, err := os.OpenFile(k.path("a.md"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	if _, err := f.WriteString(" two"); err != nil {
		t.Fatal(err)
	}
	require.NoError(t, f.Close())
	k.waitHints(m, "a.md")

	m = k.mark()
	require.NoError(t, os.Rename(k.path("a.md"), k.path("b.md")))
	k.waitHints(m, "a.md", "b.md")

	m = k.mark()
	require.NoError(t, os.Remove(k.path("b.md")))
	k.waitHints(m, "b.md")

	// Files that are not strands give no hints: a.png was written before
	// c.md, and c.md's hint came, so a.png's would have too.
	m = k.mark()
	mustWrite(t, k.path("a.png"), "x")
	mustWrite(t, k.path("c.md"), "x")
	k.waitHints(m, "c.md")
	if n := k.mark()[Hint{Path: "a.png"}]; n != 0 {
		t.Errorf("%d hints for a.png; want none", n)
	}
}

// TestWatcher_Kernel_MkdirDeepThenWrite is the race the walk after each
// new watch exists for: directories and a file created faster than the
// watcher can add watches.
func TestWatcher_Kernel_MkdirDeepThenWrite(t *testing.T) {
	k := startKernel(t, t.TempDir(), nil)
	const rounds = 50
	m := k.mark()
	var want []string
	for i := range rounds {
		rel := fmt.Sprintf("r%02d/a/b/c/x.md", i)
		require.NoError(t, os.MkdirAll(filepath.Dir(k.path(rel)), 0o755))
		mustWrite(t, k.path(rel), "x")
		want = append(want, rel)
	}
	k.waitHints(m, want...)
	// Every directory ends up watched, once.
	k.waitFor("all directories watched", func(map[Hint]int) bool { return k.w.counts().Watched == 1+4*rounds })
	adds := k.rb.added()
	slices.Sort(adds)
	if c := slices.Compact(slices.Clone(adds)); len(c) != len(adds) {
		t.Errorf("%d Add calls for %d distinct directories; want one each", len(adds), len(c))
	}
}

func TestWatcher_Kernel_IgnoredDirectoriesNeverWatched(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git/objects/ab", ".obsidian/plugins", ".knot/runs", ".trash", "node_modules/pkg",
		"notes/drafts/old", "notes/kept", "my-config/themes"} {
		mustMkdir(t, filepath.Join(root, filepath.FromSlash(d)))
	}
	mustWrite(t, filepath.Join(root, "notes/.gitignore"), "drafts/\n")
	k := startKernel(t, root, func(w *Watcher, _ *recordingBackend) { w.Rules.ConfigDir = "my-config" })

	// Directories created at run time inside ignored ones stay unwatched too.
	m := k.mark()
	for _, d := range []string{".git/refs/heads", ".obsidian/snippets", "node_modules/pkg/lib", "notes/drafts/new"} {
		mustMkdir(t, k.path(d))
		mustWrite(t, k.path(d+"/x.md"), "x")
	}
	mustMkdir(t, k.path("notes/kept/new"))
	mustWrite(t, k.path("notes/kept/new/x.md"), "x")
	k.waitHints(m, "notes/kept/new/x.md")

	var got []string
	for _, a := range k.rb.added() {
		r, _ := filepath.Rel(root, a)
		got = append(got, filepath.ToSlash(r))
	}
	slices.Sort(got)
	want := []string{".", "notes", "notes/kept", "notes/kept/new"}
	if !slices.Equal(got, want) {
		t.Errorf("directories watched = %v; want %v", got, want)
	}
	if st := k.w.counts(); st.Watched != len(want) {
		t.Errorf("Stats().Watched = %d; want %d", st.Watched, len(want))
	}
	for h := range k.mark() {
		if strings.Contains(h.Path, "drafts") || strings.HasPrefix(h.Path, ".") || strings.HasPrefix(h.Path, "node_modules") {
			t.Errorf("hint %v for an ignored path", h)
		}
	}
}

func TestWatcher_Kernel_GitignoreChangeAtRuntime(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "notes/.gitignore"), "drafts/\n")
	mustWrite(t, filepath.Join(root, "notes/drafts/d.md"), "x")
	k := startKernel(t, root, nil)

	m := k.mark()
	mustWrite(t, k.path("notes/drafts/e.md"), "x")
	mustWrite(t, k.path("notes/control.md"), "x")
	k.waitHints(m, "notes/control.md")
	if n := k.mark()[Hint{Path: "notes/drafts/e.md"}]; n != 0 {
		t.Fatalf("%d hints for an ignored file; want none", n)
	}

	m = k.mark()
	mustWrite(t, k.path("notes/.gitignore"), "# nothing ignored now\n")
	dirHint := Hint{Path: "notes", Dir: true}
	k.waitFor("a rescan of notes/", func(seen map[Hint]int) bool { return seen[dirHint] > m[dirHint] })

	// The rescan came after the reload: drafts is watched now.
	m = k.mark()
	mustWrite(t, k.path("notes/drafts/f.md"), "x")
	k.waitHints(m, "notes/drafts/f.md")
	if ignored, why := k.w.Rules.Explain("notes/drafts/d.md"); ignored {
		t.Errorf("Explain(notes/drafts/d.md) = true, %q; want not ignored after the change", why)
	}
}

func TestWatcher_Kernel_WatchLimitPolls(t *testing.T) {
	root := t.TempDir()
	mustMkdir(t, filepath.Join(root, "full"))
	k := startKernel(t, root, func(w *Watcher, rb *recordingBackend) {
		w.pollInterval = 20 * time.Millisecond
		rb.addErr = func(name string) error {
			if filepath.Base(name) == "full" {
				return fmt.Errorf("inotify_add_watch: %w", syscall.ENOSPC)
			}
			return nil
		}
	})
	if st := k.w.counts(); st.Watched != 1 || st.Polled != 1 {
		t.Fatalf("Stats() = %+v; want 1 watched, 1 polled", st)
	}
	m := k.mark()
	mustWrite(t, k.path("full/new.md"), "x")
	k.waitHints(m, "full/new.md")
	if logs := k.logs.String(); !kqueueFDs && !strings.Contains(logs, "fs.inotify.max_user_watches") {
		t.Errorf("logs lack the limit message:\n%s", logs)
	}
}

func TestWatcher_Kernel_DirectoryRenameAndRemove(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "notes/deep/a.md"), "x")
	mustMkdir(t, filepath.Join(root, "archive"))
	k := startKernel(t, root, nil)
	if st := k.w.counts(); st.Watched != 4 {
		t.Fatalf("Stats().Watched = %d; want 4", st.Watched)
	}

	m := k.mark()
	require.NoError(t, os.Rename(k.path("notes"), k.path("archive/notes2")))
	k.waitHints(m, "archive/notes2/deep/a.md")
	k.waitFor("a rescan of notes/", func(seen map[Hint]int) bool { return seen[Hint{Path: "notes", Dir: true}] > 0 })

	// The moved directories are watched under their new names.
	m = k.mark()
	mustWrite(t, k.path("archive/notes2/deep/b.md"), "x")
	k.waitHints(m, "archive/notes2/deep/b.md")
	if st := k.w.counts(); st.Watched != 4 {
		t.Errorf("Stats().Watched after the rename = %d; want 4", st.Watched)
	}
	if n := k.mark()[Hint{Path: "notes/deep/b.md"}]; n != 0 {
		t.Errorf("%d hints under the old name; want none", n)
	}

	require.NoError(t, os.RemoveAll(k.path("archive")))
	k.waitFor("a rescan of archive/", func(seen map[Hint]int) bool { return seen[Hint{Path: "archive", Dir: true}] > 0 })
	k.waitFor("the watches dropped", func(map[Hint]int) bool { return k.w.counts().Watched == 1 })
}
