package reconcile

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/vaultfs"
	"github.com/knotd/knotd/internal/watcher"
)

// fakeHost is a vault reduced to what Host asks: a state store in the
// test's folder, strands read with package vaultfs, claims in a map. No
// pipeline: no tie-off waits, and nothing is written into notes.
type fakeHost struct {
	t      *testing.T
	fs     *os.Root
	store  *state.Store
	mu     sync.Mutex
	claims map[string]bool
}

func (h *fakeHost) Log() *slog.Logger { return slog.New(slog.DiscardHandler) }
func (h *fakeHost) WarnOnce(path, msg string, args ...any) {
	h.t.Logf("warn once: %s: %s %v", path, msg, args)
}
func (h *fakeHost) NoticeOnce(key string, say func()) { say() }
func (h *fakeHost) Dry() bool                         { return false }
func (h *fakeHost) Store() *state.Store               { return h.store }
func (h *fakeHost) MaxStrandSize() int64              { return 1 << 20 }
func (h *fakeHost) OpenStrand(rel string) (*os.File, fs.FileInfo, error) {
	if err := strand.ValidateRel(rel); err != nil {
		return nil, nil, err
	}
	return vaultfs.Open(h.fs, rel)
}
func (h *fakeHost) ReadStrand(rel string, limit int64) ([]byte, bool, error) {
	b, _, err := vaultfs.ReadFile(h.fs, filepath.FromSlash(rel), limit)
	if errors.Is(err, vaultfs.ErrTooLarge) {
		return nil, true, nil
	}
	return b, false, err
}
func (h *fakeHost) TryClaim(rel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.claims[rel] {
		return false
	}
	h.claims[rel] = true
	return true
}
func (h *fakeHost) Release(rel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.claims, rel)
}
func (h *fakeHost) WaitingFor(string) (string, bool)    { return "", false }
func (h *fakeHost) UnwritableTieOff(string, error) bool { return false }
func (h *fakeHost) Rescue(string, []byte) (string, error) {
	return "", errors.New("no rescue in this test")
}
func (h *fakeHost) SettleGuard(string, *vaultfs.Guard) {}

// hostEnv is a vault whose strands are recorded as they are on disk, and
// the reconciler of it on a fakeHost.
func hostEnv(t *testing.T, strands map[string]string) (*env, *fakeHost) {
	e := newEnv(t)
	for rel, content := range strands {
		mustDo(t, os.MkdirAll(filepath.Dir(e.abs(rel)), 0o755))
		e.write(rel, content)
	}
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	mustDo(t, err)
	t.Cleanup(func() { mustDo(t, store.Close()) })
	h := &fakeHost{t: t, fs: e.r.fs, store: store, claims: map[string]bool{}}
	e.r = New(h, Options{FS: e.r.fs, Root: e.dir, Rules: &ignore.Rules{}})
	for rel, content := range strands {
		if !strand.IsStrandPath(rel) {
			continue
		}
		info, err := os.Lstat(e.abs(rel))
		mustDo(t, err)
		mustDo(t, store.Put(state.Record{Path: rel, Stamp: Stamp(info), Hash: state.HashOf([]byte(content))}, []byte(content)))
	}
	return e, h
}

// TestReconciler_OnAHost: the reconciler needs nothing of the vault but
// its Host: on a bare one it finds what changed, was created or deleted,
// and moves the record and tie-off of a moved strand without reporting it.
func TestReconciler_OnAHost(t *testing.T) {
	tests := []struct {
		name        string
		change      func(e *env)
		want        []string // pending, sorted
		wantRecords []string
		wantFiles   []string // that must exist afterwards
	}{
		{name: "nothing changed", change: func(*env) {},
			wantRecords: []string{"a.md", "b.md", "notes/c.md"}},
		{name: "modified, created, deleted", change: func(e *env) {
			e.write("a.md", "# a, changed\n")
			e.write("new.md", "# new\n")
			mustDo(t, os.Remove(e.abs("b.md")))
		}, want: []string{"a.md", "b.md", "new.md"}, wantRecords: []string{"a.md", "b.md", "notes/c.md"}},
		{name: "moved with its tie-off", change: func(e *env) {
			mustDo(t, os.Rename(e.abs("notes/c.md"), e.abs("moved.md")))
		}, wantRecords: []string{"a.md", "b.md", "moved.md"}, wantFiles: []string{"moved.tieoff.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, h := hostEnv(t, map[string]string{
				"a.md": "# a\n", "b.md": "# b\n", "notes/c.md": "# c\n", "notes/c.tieoff.md": "# c's answers\n",
			})
			tt.change(e)
			got, err := e.r.Reconcile([]watcher.Hint{{Dir: true}})
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Reconcile = %v, %v; want %v", got, err, tt.want)
			}
			var recs []string
			it := h.store.Records("")
			for {
				r, err := it.Peek()
				mustDo(t, err)
				if r == nil {
					break
				}
				recs = append(recs, r.Path)
				it.Next()
			}
			if !slices.Equal(recs, tt.wantRecords) {
				t.Errorf("records = %v; want %v", recs, tt.wantRecords)
			}
			for _, rel := range tt.wantFiles {
				if !e.exists(rel) {
					t.Errorf("%s is not there", rel)
				}
			}
			if len(h.claims) != 0 {
				t.Errorf("claims left held: %v", h.claims)
			}
		})
	}
}
