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
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// fakeBackend stands in for fsnotify in synctest tests: the test sends
// the events, Add checks the directory exists on disk, and addErr can
// refuse a watch the way the kernel does.
type fakeBackend struct {
	events chan fsnotify.Event
	errors chan error
	addErr func(name string) error

	mu      sync.Mutex
	watches map[string]bool
	adds    []string // every Add ever attempted, in order
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{
		events:  make(chan fsnotify.Event),
		errors:  make(chan error),
		watches: make(map[string]bool),
	}
}

func (f *fakeBackend) Add(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.adds = append(f.adds, name)
	if f.addErr != nil {
		if err := f.addErr(name); err != nil {
			return err
		}
	}
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("fake: %s is not a directory", name)
	}
	f.watches[name] = true
	return nil
}

func (f *fakeBackend) Remove(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.watches[name] {
		return fmt.Errorf("%w: %s", fsnotify.ErrNonExistentWatch, name)
	}
	delete(f.watches, name)
	return nil
}

func (f *fakeBackend) Events() <-chan fsnotify.Event { return f.events }
func (f *fakeBackend) Errors() <-chan error          { return f.errors }
func (f *fakeBackend) Close() error                  { return nil }

// watched returns the watched directories, vault-relative, sorted.
func (f *fakeBackend) watched(root string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for w := range f.watches {
		r, _ := filepath.Rel(root, w)
		out = append(out, filepath.ToSlash(r))
	}
	slices.Sort(out)
	return out
}

func isMD(rel string) bool { return strings.HasSuffix(rel, ".md") }

// harness runs a Watcher on a fake backend inside a synctest bubble, with
// a consumer that receives every hint at once and notes when it came.
type harness struct {
	t      *testing.T
	root   string
	fb     *fakeBackend
	w      *Watcher
	done   chan error
	cancel context.CancelFunc
	logs   *testutil.Buffer
	start  time.Time

	mu       sync.Mutex
	got      []seen
	consumed chan struct{} // closed when out was closed
}

// seen is a hint and when it was sent, relative to the harness start.
type seen struct {
	at time.Duration
	h  Hint
}

func (s seen) String() string { return fmt.Sprintf("%v@%v", s.h, s.at) }

// startFake starts Run on root and consumes the initial full rescan. It
// must be called inside synctest.Test.
func startFake(t *testing.T, root string, configure func(*Watcher, *fakeBackend)) *harness {
	t.Helper()
	fb := newFakeBackend()
	logs := &testutil.Buffer{}
	w := &Watcher{
		Root:       root,
		Filter:     isMD,
		Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		newBackend: func() (backend, error) { return fb, nil },
	}
	if configure != nil {
		configure(w, fb)
	}
	ctx, cancel := context.WithCancel(t.Context())
	h := &harness{t: t, root: root, fb: fb, w: w, done: make(chan error, 1), cancel: cancel, logs: logs,
		consumed: make(chan struct{}), start: time.Now()}
	out := make(chan Hint)
	go func() { h.done <- w.Run(ctx, out) }()
	go func() {
		defer close(h.consumed)
		for x := range out {
			h.mu.Lock()
			h.got = append(h.got, seen{time.Since(h.start), x})
			h.mu.Unlock()
		}
	}()
	if got := h.recv(); len(got) != 1 || got[0] != fullRescan {
		t.Fatalf("first hints = %v; want [full rescan]\nlogs:\n%s", got, logs)
	}
	h.mu.Lock()
	h.start = time.Now()
	h.mu.Unlock()
	return h
}

// event delivers one fsnotify event for a vault-relative path.
func (h *harness) event(rel string, op fsnotify.Op) {
	h.fb.events <- fsnotify.Event{Name: filepath.Join(h.root, filepath.FromSlash(rel)), Op: op}
}

// recvSeen waits until the bubble is idle and returns the hints received
// since the last call, with their times.
func (h *harness) recvSeen() []seen {
	synctest.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	got := h.got
	h.got = nil
	return got
}

// recv is recvSeen without the times, and without the full rescans'
// listings (so that hints compare with ==).
func (h *harness) recv() []Hint {
	var hs []Hint
	for _, s := range h.recvSeen() {
		s.h.Listing = nil
		hs = append(hs, s.h)
	}
	return hs
}

// after sleeps until d after start and returns what was received since
// the last call.
func (h *harness) after(d time.Duration) []Hint {
	time.Sleep(time.Until(h.start.Add(d)))
	return h.recv()
}

// stop cancels Run and checks it returned nil and closed out.
func (h *harness) stop() {
	h.t.Helper()
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Errorf("Run returned %v; want nil after cancellation", err)
	}
	<-h.consumed
}

func mustMkdir(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(path, 0o755))
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}
