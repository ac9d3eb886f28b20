package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/knotd/knotd/internal/flock"
	"github.com/stretchr/testify/require"
)

// newVault makes a vault directory and returns its path with symbolic
// links resolved, as knotd passes it.
func newVault(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return root
}

func mustAcquire(t *testing.T, home, root string) *Lock {
	t.Helper()
	l, err := Acquire(home, root)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", root, err)
	}
	t.Cleanup(func() { _ = l.Release() })
	return l
}

func TestHome(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/xdg/state")
	if h, err := Home(); err != nil || h != filepath.Join("/xdg/state", "knotd") {
		t.Errorf("Home() with XDG_STATE_HOME = %q, %v", h, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative/ignored")
	h, err := Home()
	if err != nil {
		t.Fatalf("Home() = %v", err)
	}
	switch runtime.GOOS {
	case "linux":
		home, _ := os.UserHomeDir()
		if h != filepath.Join(home, ".local", "state", "knotd") {
			t.Errorf("Home() = %q; want ~/.local/state/knotd", h)
		}
	case "darwin":
		if !strings.HasSuffix(h, filepath.Join("Library", "Application Support", "knotd")) {
			t.Errorf("Home() = %q; want ~/Library/Application Support/knotd", h)
		}
	}
}

func TestAcquire_OneFolderOneLock(t *testing.T) {
	home, root := filepath.Join(t.TempDir(), "knotd"), newVault(t)
	l := mustAcquire(t, home, root)
	if l.Folder.Root != root || l.Folder.MovedFrom != "" {
		t.Errorf("Folder = %+v", l.Folder)
	}
	_, err := Acquire(home, root)
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != os.Getpid() || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Acquire = %v; want a LockedError naming this process", err)
	}
	if !strings.Contains(err.Error(), root) || !strings.Contains(err.Error(), "pid") {
		t.Errorf("LockedError %q does not say which vault and who", err)
	}
	require.NoError(t, l.Release())
	l2 := mustAcquire(t, home, root)
	if l2.Folder.Dir != l.Folder.Dir {
		t.Errorf("after a release the vault got folder %s; want %s again", l2.Folder.Dir, l.Folder.Dir)
	}
	f, ok, err := Find(home, root)
	if err != nil || !ok || f.Dir != l.Folder.Dir {
		t.Errorf("Find = %+v, %v, %v; want %s", f, ok, err, l.Folder.Dir)
	}
	if runtime.GOOS != "windows" {
		for _, p := range []string{home, filepath.Join(home, "vaults"), l.Folder.Dir} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: mode %v, %v; want 0700", p, fi.Mode().Perm(), err)
			}
		}
		for _, p := range []string{filepath.Join(l.Folder.Dir, LockFile), filepath.Join(l.Folder.Dir, infoFile), filepath.Join(home, "vaults.lock")} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, %v; want 0600", p, fi.Mode().Perm(), err)
			}
		}
	}
}

func TestFind_ChangesNothing(t *testing.T) {
	home, root := filepath.Join(t.TempDir(), "state"), newVault(t)
	if _, ok, err := Find(home, root); ok || err != nil {
		t.Fatalf("Find on an empty state directory = %v, %v", ok, err)
	}
	if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Find made the state directory: %v", err)
	}
}

func TestAcquire_MovedVaultKeepsItsFolder(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a vault is known by its path on Windows")
	}
	home, parent := t.TempDir(), newVault(t)
	root := filepath.Join(parent, "notes")
	require.NoError(t, os.Mkdir(root, 0o755))
	l, err := Acquire(home, root)
	require.NoError(t, err)
	dir := l.Folder.Dir
	require.NoError(t, l.Release())
	moved := filepath.Join(parent, "renamed notes")
	require.NoError(t, os.Rename(root, moved))
	l = mustAcquire(t, home, moved)
	if l.Folder.Dir != dir || l.Folder.MovedFrom != root {
		t.Errorf("after a move Folder = %+v; want %s, moved from %s", l.Folder, dir, root)
	}
	require.NoError(t, l.Release())

	// A new directory at the old path is another vault: it gets a folder
	// of its own, and the moved vault keeps its folder.
	require.NoError(t, os.Mkdir(root, 0o755))
	other := mustAcquire(t, home, root)
	if other.Folder.Dir == dir {
		t.Errorf("a new directory at the vault's old path took the moved vault's folder %s", dir)
	}
	if f, ok, err := Find(home, moved); err != nil || !ok || f.Dir != dir {
		t.Errorf("Find(moved) = %+v, %v, %v; want %s", f, ok, err, dir)
	}
}

// TestAcquire_ConcurrentStartsMakeOneFolder: knotd started twice on one new
// vault at the same moment must end with one folder and one lock holder,
// or both would answer the vault.
func TestAcquire_ConcurrentStartsMakeOneFolder(t *testing.T) {
	home, root := t.TempDir(), newVault(t)
	const n = 8
	var wg sync.WaitGroup
	locks := make([]*Lock, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { locks[i], errs[i] = Acquire(home, root) })
	}
	wg.Wait()
	held := 0
	for i := range n {
		if errs[i] == nil {
			held++
			defer locks[i].Release()
		} else if !errors.Is(errs[i], ErrLocked) {
			t.Errorf("Acquire %d = %v", i, errs[i])
		}
	}
	if held != 1 {
		t.Errorf("%d of %d concurrent Acquires hold the vault; want 1", held, n)
	}
	entries, err := os.ReadDir(filepath.Join(home, "vaults"))
	if err != nil || len(entries) != 1 {
		t.Errorf("state directory has %d vault folders (%v); want 1", len(entries), err)
	}
}

func TestLoadDevice(t *testing.T) {
	home := t.TempDir()
	const n = 8
	var wg sync.WaitGroup
	devs := make([]Device, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { devs[i], errs[i] = LoadDevice(home) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || devs[i] != devs[0] {
			t.Errorf("LoadDevice %d = %+v, %v; want %+v like the others", i, devs[i], errs[i], devs[0])
		}
	}
	if devs[0].ID == "" || devs[0].Name == "" {
		t.Errorf("device %+v has no id or name", devs[0])
	}
	again, err := LoadDevice(home)
	if err != nil || again != devs[0] {
		t.Errorf("LoadDevice later = %+v, %v; want the same identity", again, err)
	}
	other, err := LoadDevice(t.TempDir())
	if err != nil || other.ID == devs[0].ID {
		t.Errorf("another state directory's device = %+v, %v; want another identity", other, err)
	}
	require.NoError(t, os.WriteFile(filepath.Join(home, deviceFile), []byte("{"), 0o600))
	if _, err := LoadDevice(home); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("LoadDevice of a damaged identity = %v; want an error saying so", err)
	}
	entries, _ := os.ReadDir(home)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// legacyVault makes a vault with the machine files an earlier knotd kept
// inside it.
func legacyVault(t *testing.T) (root string, vr *os.Root) {
	t.Helper()
	root = newVault(t)
	write := func(rel, content string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	}
	write(".knot/state.db", "the old store")
	write(".knot/lock", `{"pid":1,"host":"old"}`)
	write(".knot/runs/0190f3c2-7b1a-7c3d-9e2f-1a2b3c4d5e6f.jsonl", "run 1\n")
	write(".knot/runs/0190f3c2-7b1a-7c3d-9e2f-1a2b3c4d5e70.jsonl", "run 2\n")
	write(".knot/llm/s1.db", "llm logs")
	write(".knot/config.yaml", "debounce: 3s\n")
	write("note.md", "a note\n")
	vr, err := os.OpenRoot(root)
	require.NoError(t, err)
	t.Cleanup(func() { _ = vr.Close() })
	return root, vr
}

func TestMigrate_MovesMachineFilesOut(t *testing.T) {
	root, vr := legacyVault(t)
	l := mustAcquire(t, t.TempDir(), root)
	m, err := l.Migrate(vr)
	if err != nil {
		t.Fatalf("Migrate = %v", err)
	}
	if !m.State || m.Transcripts != 2 || m.LLMLogs != 1 || !m.LockRemoved || m.OldState != "" {
		t.Errorf("Migration = %+v", m)
	}
	want := map[string]string{
		l.Folder.StateFile(): "the old store",
		filepath.Join(l.Folder.Runs(), "0190f3c2-7b1a-7c3d-9e2f-1a2b3c4d5e6f.jsonl"): "run 1\n",
		filepath.Join(l.Folder.LLM(), "s1.db"):                                       "llm logs",
	}
	for p, content := range want {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != content {
			t.Errorf("%s = %q, %v; want %q", p, b, err, content)
		}
		if fi, err := os.Stat(p); runtime.GOOS != "windows" && (err != nil || fi.Mode().Perm() != 0o600) {
			t.Errorf("%s: mode %v; want 0600", p, fi.Mode().Perm())
		}
	}
	var left []string
	_ = filepath.WalkDir(filepath.Join(root, ".knot"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			left = append(left, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(left) != 1 || left[0] != ".knot/config.yaml" {
		t.Errorf("the vault's .knot holds %v; want only the user's config.yaml", left)
	}
	if m, err := l.Migrate(vr); err != nil || m.Moved() {
		t.Errorf("a second Migrate = %+v, %v; want nothing to move", m, err)
	}
}

func TestMigrate_KeepsTheFolderStore(t *testing.T) {
	root, vr := legacyVault(t)
	l := mustAcquire(t, t.TempDir(), root)
	require.NoError(t, os.WriteFile(l.Folder.StateFile(), []byte("the new store"), 0o600))
	m, err := l.Migrate(vr)
	require.NoError(t, err)
	if m.State || !strings.HasPrefix(m.OldState, StateFile+".legacy-") {
		t.Errorf("Migration = %+v; want the vault's store kept beside the folder's", m)
	}
	if b, _ := os.ReadFile(l.Folder.StateFile()); string(b) != "the new store" {
		t.Errorf("the folder's store was replaced: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(l.Folder.Dir, m.OldState)); string(b) != "the old store" {
		t.Errorf("the vault's store was not kept: %q", b)
	}
}

// TestMigrate_WaitsForAnEarlierKnotd: while an earlier knotd holds the
// vault's old lock, nothing moves and the error names it.
func TestMigrate_WaitsForAnEarlierKnotd(t *testing.T) {
	root, vr := legacyVault(t)
	old, err := os.OpenFile(filepath.Join(root, ".knot", LockFile), os.O_RDWR, 0)
	require.NoError(t, err)
	defer old.Close()
	require.NoError(t, flock.TryLock(old))
	l := mustAcquire(t, t.TempDir(), root)
	_, err = l.Migrate(vr)
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.Host != "old" {
		t.Fatalf("Migrate while the old lock is held = %v; want a LockedError naming it", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".knot", StateFile)); err != nil {
		t.Errorf("the vault's store moved while an earlier knotd held the vault: %v", err)
	}
}

// TestMigrate_LinksAreNotFollowed: .knot/ travels with the vault, so its
// entries are someone else's input. A lock or store that is a symbolic
// link out of the vault is never opened, truncated or moved; the link is
// removed.
func TestMigrate_LinksAreNotFollowed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links")
	}
	root, vr := legacyVault(t)
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("precious"), 0o600))
	for _, name := range []string{LockFile, StateFile} {
		p := filepath.Join(root, ".knot", name)
		require.NoError(t, os.Remove(p))
		require.NoError(t, os.Symlink(victim, p))
	}
	require.NoError(t, os.RemoveAll(filepath.Join(root, ".knot", runsDir)))
	require.NoError(t, os.Symlink(outside, filepath.Join(root, ".knot", runsDir)))
	l := mustAcquire(t, t.TempDir(), root)
	m, err := l.Migrate(vr)
	if err != nil {
		t.Fatalf("Migrate = %v", err)
	}
	if m.State || m.Transcripts != 0 {
		t.Errorf("Migration = %+v; want nothing moved through links", m)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious" {
		t.Errorf("the file outside the vault = %q, %v; want it untouched", b, err)
	}
	if _, err := os.Stat(l.Folder.StateFile()); err == nil {
		t.Error("a store was made from the file a link pointed to")
	}
}

func TestIdentity_Same(t *testing.T) {
	rec := info{Root: "/v/notes", Device: 7, Inode: 42, Birth: 1000}
	tests := []struct {
		name string
		id   identity
		root string
		want bool
	}{
		{"the same directory", identity{7, 42, 1000}, "/v/notes", true},
		{"moved", identity{7, 42, 1000}, "/v/renamed", true},
		{"another directory with the inode reused", identity{7, 42, 2000}, "/v/other", false},
		{"another directory with the inode reused, at the same path", identity{7, 42, 2000}, "/v/notes", false},
		{"another inode at the path", identity{7, 43, 1000}, "/v/notes", false},
		{"another device", identity{8, 42, 1000}, "/v/notes", false},
		{"no birth time here: the path decides", identity{7, 42, 0}, "/v/notes", true},
		{"no birth time here, moved: a new folder", identity{7, 42, 0}, "/v/renamed", false},
		{"no inode (Windows): the path decides", identity{}, "/v/notes", true},
		{"no inode (Windows), another path", identity{}, "/v/other", false},
	}
	for _, tt := range tests {
		if got := tt.id.same(rec, tt.root); got != tt.want {
			t.Errorf("%s: same = %v; want %v", tt.name, got, tt.want)
		}
	}
}

// TestAcquire_DeletedVaultsInodeIsAnotherVault: a directory made after a
// vault was deleted often gets its inode number; it is another vault, and
// never takes the deleted one's folder (its state would run the old
// vault's notes in the new one).
func TestAcquire_DeletedVaultsInodeIsAnotherVault(t *testing.T) {
	home, parent := t.TempDir(), newVault(t)
	root := filepath.Join(parent, "notes")
	require.NoError(t, os.Mkdir(root, 0o755))
	l := mustAcquire(t, home, root)
	dir := l.Folder.Dir
	old, err := rootIdentity(root)
	require.NoError(t, err)
	require.NoError(t, l.Release())
	require.NoError(t, os.RemoveAll(root))
	reused := false
	for i := range 50 {
		other := filepath.Join(parent, fmt.Sprintf("other-%d", i))
		require.NoError(t, os.Mkdir(other, 0o755))
		id, err := rootIdentity(other)
		require.NoError(t, err)
		reused = reused || id.inode == old.inode && id.device == old.device
		if f, ok, err := Find(home, other); err != nil || ok {
			t.Fatalf("Find(%s) = %+v, %v, %v; want no folder (inode reused: %v)", other, f, ok, err, reused)
		}
	}
	if !reused {
		t.Logf("no new directory got the deleted vault's inode %d here: the check above held vacuously", old.inode)
	}
	require.NoError(t, os.Mkdir(root, 0o755))
	if f := mustAcquire(t, home, root); f.Folder.Dir == dir {
		t.Errorf("a new directory at the deleted vault's path took its folder %s", dir)
	}
}
