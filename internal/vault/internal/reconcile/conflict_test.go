package reconcile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/vault/internal/conflict"
	"github.com/knotd/knotd/internal/vaultfs"
)

// env is a vault folder and the reconciler of it, for what the
// reconciler does to files alone (removeCopy asks nothing of the host).
type env struct {
	t   *testing.T
	dir string
	r   *Reconciler
}

func newEnv(t *testing.T) *env {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	mustDo(t, err)
	t.Cleanup(func() { mustDo(t, root.Close()) })
	return &env{t: t, dir: dir, r: New(nil, Options{FS: root, Root: dir})}
}

func (e *env) abs(rel string) string { return filepath.Join(e.dir, filepath.FromSlash(rel)) }

func (e *env) write(rel, content string) {
	e.t.Helper()
	mustDo(e.t, os.WriteFile(e.abs(rel), []byte(content), 0o644))
}

func (e *env) exists(rel string) bool {
	_, err := os.Lstat(e.abs(rel))
	return err == nil
}

// TestRemoveCopy_OnlyTheFileItRead: a conflict copy that changed, or was
// replaced, after knotd read it stays; the one it read goes.
func TestRemoveCopy_OnlyTheFileItRead(t *testing.T) {
	const c = "n.sync-conflict-20261123-180000-ABCDEFG.md"
	for _, tc := range []struct {
		name      string
		meanwhile func(e *env)
		wantGone  bool
	}{
		{name: "unchanged", meanwhile: func(*env) {}, wantGone: true},
		{name: "written into", meanwhile: func(e *env) {
			f, err := os.OpenFile(e.abs(c), os.O_WRONLY|os.O_APPEND, 0)
			mustDo(t, err)
			_, err = f.WriteString("typed into the copy\n")
			mustDo(t, err)
			mustDo(t, f.Close())
		}},
		{name: "replaced", meanwhile: func(e *env) {
			mustDo(t, os.WriteFile(e.abs("other.txt"), []byte("# N\n"), 0o644))
			mustDo(t, os.Rename(e.abs("other.txt"), e.abs(c)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.write(c, "# N\n")
			_, fi, err := vaultfs.ReadFile(e.r.fs, c, 1<<20)
			mustDo(t, err)
			tc.meanwhile(e)
			how, err := e.r.removeCopy(c, fi, conflict.Removed)
			if err != nil || (how == conflict.Removed) != tc.wantGone || e.exists(c) == tc.wantGone {
				t.Errorf("removeCopy = %d, %v; copy there: %v; want it removed: %v", how, err, e.exists(c), tc.wantGone)
			}
		})
	}
}
