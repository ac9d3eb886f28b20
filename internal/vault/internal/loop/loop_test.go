package loop

import (
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/watcher"
)

// fakeHost is a vault of strands that are on disk or gone, recorded or
// new, whose reconcile fails while fails is above zero. It records what
// the loop reconciled and submitted, and when.
type fakeHost struct {
	mu         sync.Mutex
	start      time.Time
	gone, new  map[string]bool
	moved      map[string]bool // reconciled together, these are a move: nothing changed
	fails      int
	reconciled [][]string
	submitted  []submission
	damaged    chan struct{}
}

type submission struct {
	rel   string
	fired agentrun.FiredBy
	at    time.Duration // after start
}

func (h *fakeHost) Now() time.Time    { return time.Now() }
func (h *fakeHost) Log() *slog.Logger { return slog.New(slog.DiscardHandler) }
func (h *fakeHost) Reconcile(hints []watcher.Hint) (changed, unlooked []string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var paths []string
	for _, hint := range hints {
		paths = append(paths, hint.Path)
	}
	slices.Sort(paths)
	h.reconciled = append(h.reconciled, paths)
	if h.fails > 0 {
		h.fails--
		return nil, nil, errors.New("too many open files")
	}
	if len(h.moved) > 0 && slices.Equal(slices.Sorted(maps.Keys(h.moved)), paths) {
		return nil, nil, nil // the two halves of a move, reconciled together
	}
	return paths, nil, nil
}
func (h *fakeHost) Gone(rel string) bool { h.mu.Lock(); defer h.mu.Unlock(); return h.gone[rel] }
func (h *fakeHost) New(rel string) bool  { h.mu.Lock(); defer h.mu.Unlock(); return h.new[rel] }
func (h *fakeHost) Own(string) bool      { return false }
func (h *fakeHost) Submit(rel string, fired agentrun.FiredBy) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.submitted = append(h.submitted, submission{rel, fired, time.Since(h.start)})
}
func (h *fakeHost) Journaled() ([]string, error)                    { return nil, nil }
func (h *fakeHost) AllowedDeferred() []string                       { return nil }
func (h *fakeHost) ReleaseMemory()                                  {}
func (h *fakeHost) ReloadIfChanged()                                {}
func (h *fakeHost) Damaged() <-chan struct{}                        { return h.damaged }
func (h *fakeHost) StateDamaged() error                             { return errors.New("damaged") }
func (h *fakeHost) Reconciled(hints []watcher.Hint, paths []string) {}
func (h *fakeHost) Looped(int)                                      {}

// TestLoop_TimedWork runs the loop alone in fake time: a strand found
// gone, or new, waits one quiet period before it is submitted; a gone and
// a new strand waiting together are reconciled together when the first is
// due (a move: nothing is submitted); a known strand on disk is submitted
// at once; hints whose reconcile fails are tried again after a second,
// then two.
func TestLoop_TimedWork(t *testing.T) {
	const delay = 30 * time.Second
	type hint struct {
		rel string
		at  time.Duration // after start
	}
	tests := []struct {
		name          string
		hints         []hint
		gone, new     []string
		moved         []string
		fails         int
		wantSubmitted []submission
		wantRecon     [][]string
	}{
		{name: "known strand at once", hints: []hint{{"a.md", 0}},
			wantSubmitted: []submission{{"a.md", agentrun.FiredByWatch, 0}},
			wantRecon:     [][]string{{"a.md"}}},
		{name: "gone strand waits", hints: []hint{{"a.md", 0}}, gone: []string{"a.md"},
			wantSubmitted: []submission{{"a.md", agentrun.FiredByWatch, delay}},
			wantRecon:     [][]string{{"a.md"}, {"a.md"}}},
		{name: "new strand waits", hints: []hint{{"b.md", 0}}, new: []string{"b.md"},
			wantSubmitted: []submission{{"b.md", agentrun.FiredByWatch, delay}},
			wantRecon:     [][]string{{"b.md"}, {"b.md"}}},
		{name: "a move pairs its halves", hints: []hint{{"a.md", 0}, {"b.md", 10 * time.Second}}, gone: []string{"a.md"}, new: []string{"b.md"}, moved: []string{"a.md", "b.md"},
			wantRecon: [][]string{{"a.md"}, {"b.md"}, {"a.md", "b.md"}}},
		{name: "failed reconcile backs off", hints: []hint{{"a.md", 0}}, fails: 2,
			wantSubmitted: []submission{{"a.md", agentrun.FiredByWatch, 3 * time.Second}},
			wantRecon:     [][]string{{"a.md"}, {"a.md"}, {"a.md"}}},
	}
	set := func(rels []string) map[string]bool {
		m := map[string]bool{}
		for _, rel := range rels {
			m[rel] = true
		}
		return m
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := &fakeHost{start: time.Now(), gone: set(tt.gone), new: set(tt.new), moved: set(tt.moved), fails: tt.fails, damaged: make(chan struct{})}
				hints := make(chan watcher.Hint)
				done := make(chan error, 1)
				go func() { done <- New(h, Options{Delay: delay, Every: time.Hour}).Run(hints) }()
				for _, hi := range tt.hints {
					time.Sleep(time.Until(h.start.Add(hi.at)))
					hints <- watcher.Hint{Path: hi.rel}
				}
				time.Sleep(time.Until(h.start.Add(time.Minute)))
				synctest.Wait()
				close(hints)
				if err := <-done; err != nil {
					t.Fatalf("Run = %v", err)
				}
				h.mu.Lock()
				defer h.mu.Unlock()
				if !slices.Equal(h.submitted, tt.wantSubmitted) {
					t.Errorf("submitted %v; want %v", h.submitted, tt.wantSubmitted)
				}
				if !slices.EqualFunc(h.reconciled, tt.wantRecon, slices.Equal) {
					t.Errorf("reconciled %v; want %v", h.reconciled, tt.wantRecon)
				}
			})
		})
	}
}

// TestLoop_StateDamaged: the loop stops with the host's error when the
// state store is found damaged.
func TestLoop_StateDamaged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &fakeHost{start: time.Now(), damaged: make(chan struct{})}
		done := make(chan error, 1)
		go func() { done <- New(h, Options{}).Run(make(chan watcher.Hint)) }()
		close(h.damaged)
		if err := <-done; err == nil || err.Error() != "damaged" {
			t.Errorf("Run = %v; want the host's damage", err)
		}
	})
}
