package vault

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/testutil"
)

// A vault is shared ground (docs/design.md#invariants, 8): nothing of the
// machine's lives in it, and the machine's state is a cache that the
// tie-offs can rebuild. These tests hold knotd to that.

// logged returns options whose logger writes into a buffer the test reads.
func (e *env) logged() (Options, *testutil.Buffer) {
	var buf testutil.Buffer
	o := e.options()
	o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return o, &buf
}

// onceWith runs a --once pass with opts.
func (e *env) onceWith(opts Options, once OnceOptions) Summary {
	e.t.Helper()
	v, err := Open(e.root, opts)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	sum, err := v.Once(context.Background(), once)
	if cerr := v.Close(); cerr != nil {
		e.t.Fatalf("Close: %v", cerr)
	}
	if err != nil {
		e.t.Fatalf("Once: %v", err)
	}
	return sum
}

// ran returns "Event strand" for each run of a summary, sorted.
func ran(sum Summary) []string {
	var rs []string
	for _, r := range sum.Runs {
		rs = append(rs, r.Event.String()+" "+r.Strand)
	}
	slices.Sort(rs)
	return rs
}

// vaultFiles lists the vault's files below .knot, and every file outside
// it that is not a note or a tie-off.
func (e *env) machineFilesInVault() []string {
	e.t.Helper()
	var found []string
	err := filepath.WalkDir(e.root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(e.root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".knot/config.yaml", strings.HasPrefix(rel, ".knot/devices/"):
		case strings.HasSuffix(rel, ".md"):
		default:
			found = append(found, rel)
		}
		return nil
	})
	mustDo(e.t, err)
	return found
}

// TestOnce_MachineFilesStayOutOfTheVault: after runs, a failure, a rename
// and a deletion the vault holds notes, tie-offs, the user's config and
// the devices' heartbeats, nothing else; the state, the lock and the
// transcripts are in the state directory.
func TestOnce_MachineFilesStayOutOfTheVault(t *testing.T) {
	e := newEnv(t)
	e.write(".knot/config.yaml", "debounce: 1s\n")
	e.write("a.md", "# A\n")
	e.onceFresh()
	e.write("a.md", "# A, edited\n")
	e.write("b.md", "---\nknot_mode: maybe\n---\n")
	e.write("c.md", "# C\n")
	e.onceFresh()
	e.rename("a.md", "sub/a.md")
	e.remove("c.md")
	e.onceFresh()
	if got := e.machineFilesInVault(); len(got) != 0 {
		t.Errorf("knotd left machine files in the vault: %v", got)
	}
	f := e.folder()
	for _, p := range []string{f.StateFile(), filepath.Join(f.Dir, statedir.LockFile)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if entries, err := os.ReadDir(f.Runs()); err != nil || len(entries) < 3 {
		t.Errorf("the state directory holds %d transcripts, %v; want one per run", len(entries), err)
	}
}

// TestOpen_MigratesTheVaultsMachineFiles: a vault an earlier knotd ran on
// keeps its state store (with a run a crash left journaled), transcripts
// and lock in .knot. The first start moves them to the state directory,
// once, says so in one line, and loses nothing: the journaled run is
// appended exactly once and no change is run again.
func TestOpen_MigratesTheVaultsMachineFiles(t *testing.T) {
	e := newEnv(t)
	p := journaledRun(t, e)
	e.write("other.md", "# Other\n")
	e.onceFresh() // other.md is answered; note.md stays journaled
	// Put the machine files where an earlier knotd kept them.
	f := e.folder()
	mustDo(t, os.Rename(f.StateFile(), e.abs(".knot/state.db")))
	mustDo(t, os.Rename(f.Runs(), e.abs(".knot/runs")))
	e.write(".knot/lock", `{"pid":1,"host":"old"}`)
	mustDo(t, os.RemoveAll(f.Dir))
	e.write("other.md", "# Other, edited while knotd was being upgraded\n")

	opts, log := e.logged()
	sum := e.onceWith(opts, OnceOptions{})
	if got := ran(sum); !slices.Equal(got, []string{"Modified other.md"}) {
		t.Errorf("runs after the migration = %v; want only the edit made meanwhile", got)
	}
	if n := strings.Count(log.String(), "moved knotd's own files out of the vault"); n != 1 {
		t.Errorf("the migration was said %d times; want once:\n%s", n, log)
	}
	if got := e.machineFilesInVault(); len(got) != 0 {
		t.Errorf("machine files left in the vault after the migration: %v", got)
	}
	secs := e.sections("note.md")
	if len(secs) != 1 || secs[0].RunID != p.RunID {
		t.Errorf("note.md's sections = %+v; want the journaled run's once", secs)
	}
	runs, err := os.ReadDir(e.runsDir())
	if err != nil || len(runs) < 3 {
		t.Errorf("transcripts in the state directory: %d, %v; want the migrated ones and the new run's", len(runs), err)
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a further pass ran %v", ran(sum))
	}
}

// answeredVault makes a vault whose notes knotd answered before its state
// of the vault was lost: a.md, b.md and c.md each have a tie-off that
// answers them; then b.md is edited, c.md deleted, d.md created without a
// tie-off, and the vault's folder in the state directory is gone.
func answeredVault(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.onceFresh() // first contact with an empty vault
	e.write("a.md", "# A\n")
	e.write("b.md", "# B\n")
	e.write("sub/c.md", "# C\n")
	if sum := e.onceFresh(); sum.Ran != 3 {
		t.Fatalf("first runs = %v; want 3", ran(sum))
	}
	e.write("b.md", "# B, edited since its answer\n")
	e.remove("sub/c.md")
	e.write("d.md", "# D, never answered\n")
	mustDo(t, os.RemoveAll(e.folder().Dir)) // this device's state of the vault is lost
	return e
}

// TestOnce_RebuildsFromTieOffs: a device without state (a fresh clone, a
// new laptop, a lost state directory) runs exactly the notes changed since
// their last answer, and adopts the rest. A note deleted meanwhile gets no
// Deleted run: knotd knows neither its last content nor its settings.
func TestOnce_RebuildsFromTieOffs(t *testing.T) {
	e := answeredVault(t)
	sum := e.onceFresh()
	if got, want := ran(sum), []string{"Modified b.md"}; !slices.Equal(got, want) {
		t.Errorf("runs = %v; want %v", got, want)
	}
	if sum.Adopted != 1 || sum.Answered != 1 || sum.Standby != "" {
		t.Errorf("summary adopted %d, answered %d; want d.md adopted and a.md answered", sum.Adopted, sum.Answered)
	}
	if evs := e.events("b.md"); !slices.Equal(evs, []string{"Created", "Modified"}) {
		t.Errorf("b.md's tie-off = %v", evs)
	}
	if evs := e.events("sub/c.md"); !slices.Equal(evs, []string{"Created"}) {
		t.Errorf("sub/c.md's tie-off = %v", evs)
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a further pass ran %v", ran(sum))
	}
	// The session survives: the Modified run continued b.md's.
	secs := e.sections("b.md")
	if len(secs) != 2 || secs[0].Session == "" || secs[1].Session != secs[0].Session {
		t.Errorf("b.md's sessions = %q, %q; want the same session kept", secs[0].Session, secs[1].Session)
	}
}

// TestOpen_DamagedStateIsMovedAsideAndRebuilt: a damaged state store is
// never a panic and never a silent re-adoption: knotd says so, moves it
// aside, and rebuilds from the tie-offs, running the changes it can see.
// Damage bbolt sees when it opens the file is found at the start; damage
// to the pages is found at the start after an unclean stop (the store is
// checked then), and otherwise when a pass meets it: that pass stops with
// an error and the next start rebuilds.
func TestOpen_DamagedStateIsMovedAsideAndRebuilt(t *testing.T) {
	// overwrite damages every page after the two meta pages but the root
	// bucket's. bbolt keeps small buckets inline in that page, and reads a
	// damaged inline bucket from a copy on the heap, past its end: a race
	// build (checkptr) stops that with a fatal error, which no recover
	// sees, where a normal build reads garbage, faults or panics (which
	// the store recovers). The garbage and truncated cases damage it.
	overwrite := func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		mustDo(t, err)
		root, pageSize := rootPage(t, b)
		for i := 2 * pageSize; i < len(b); i += 97 {
			if i/pageSize != root {
				b[i] ^= 0xa5
			}
		}
		mustDo(t, os.WriteFile(path, b, 0o600))
	}
	for _, damage := range []struct {
		name string
		do   func(t *testing.T, e *env, path string)
	}{
		{"garbage", func(t *testing.T, _ *env, path string) {
			mustDo(t, os.WriteFile(path, bytes.Repeat([]byte("not a database "), 4096), 0o600))
		}},
		{"truncated", func(t *testing.T, _ *env, path string) {
			mustDo(t, os.Truncate(path, 4096))
		}},
		{"pages overwritten", func(t *testing.T, _ *env, path string) { overwrite(t, path) }},
		{"pages overwritten, then a crash", func(t *testing.T, e *env, path string) {
			overwrite(t, path)
			mustDo(t, os.WriteFile(e.folder().Running(), nil, 0o600)) // what a crash leaves
		}},
	} {
		t.Run(damage.name, func(t *testing.T) {
			e := newEnv(t)
			e.onceFresh()
			for i := range 40 {
				e.write(fmt.Sprintf("n%02d.md", i), fmt.Sprintf("# Note %d\n", i))
			}
			e.write("b.md", "# B\n")
			e.onceFresh()
			path := e.statePath()
			damage.do(t, e, path)
			e.write("b.md", "# B, edited while the state was being damaged\n")

			opts, log := e.logged()
			var runs []string
			for pass := range 2 {
				v, err := Open(e.root, opts)
				if err != nil {
					t.Fatalf("Open after the damage: %v", err)
				}
				sum, err := v.Once(context.Background(), OnceOptions{})
				mustDo(t, v.Close())
				runs = append(runs, ran(sum)...)
				if err == nil {
					break
				}
				if !errors.Is(err, ErrStateDamaged) || pass > 0 {
					t.Fatalf("pass %d: %v", pass, err)
				}
			}
			if !slices.Equal(runs, []string{"Modified b.md"}) {
				t.Errorf("runs = %v; want the edit only, once", runs)
			}
			if !strings.Contains(log.String(), "the state store is damaged") {
				t.Errorf("the damage was not said:\n%s", log)
			}
			aside, _ := filepath.Glob(path + ".damaged-*")
			if len(aside) != 1 {
				t.Errorf("the damaged store was not moved aside: %v", aside)
			}
			if sum := e.onceFresh(); sum.Ran != 0 {
				t.Errorf("a further pass ran %v", ran(sum))
			}
		})
	}
}

// TestOnce_StateOlderThanTheVault: what another device answered (its
// sections are in the tie-offs) is not answered again by a device whose
// state predates it.
func TestOnce_StateOlderThanTheVault(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("a.md", "# A\n")
	e.onceFresh()
	other := *e
	other.home = t.TempDir() // the other device
	e.write("a.md", "# A, edited\n")
	e.write("new.md", "# New\n")
	// First contact on the other device: a.md changed since its answer.
	if got := ran(other.onceWith(other.options(), OnceOptions{TakeOver: true})); !slices.Equal(got, []string{"Modified a.md"}) {
		t.Fatalf("the other device's first pass ran %v", got)
	}
	e.write("a.md", "# A, edited again\n")
	e.write("new.md", "# New, edited\n")
	if got := ran(other.onceWith(other.options(), OnceOptions{})); !slices.Equal(got, []string{"Modified a.md", "Modified new.md"}) {
		t.Fatalf("the other device ran %v", got)
	}
	// This device's state predates those answers.
	sum := e.onceWith(e.options(), OnceOptions{TakeOver: true})
	if sum.Ran != 0 {
		t.Errorf("this device answered again what the other answered: %v", ran(sum))
	}
	if sum.Skipped != 2 {
		t.Errorf("summary = %+v; want both recorded as already answered", sum)
	}
	if evs := e.events("a.md"); !slices.Equal(evs, []string{"Created", "Modified", "Modified"}) {
		t.Errorf("a.md's tie-off = %v; want each change answered once", evs)
	}
}

// TestOpen_DeletedStateDoesNotDropPendingChanges: a state directory
// deleted while knotd was stopped does not make knotd adopt, silently,
// the edits made meanwhile: the tie-offs show they are unanswered.
func TestOpen_DeletedStateDoesNotDropPendingChanges(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("a.md", "# A\n")
	e.onceFresh()
	e.write("a.md", "# A, edited while knotd was stopped\n")
	mustDo(t, os.RemoveAll(e.folder().Dir))
	opts, log := e.logged()
	if got := ran(e.onceWith(opts, OnceOptions{})); !slices.Equal(got, []string{"Modified a.md"}) {
		t.Errorf("runs = %v; want the edit", got)
	}
	if !strings.Contains(log.String(), "first contact") || !strings.Contains(log.String(), "changed=1") {
		t.Errorf("the rebuild was not said:\n%s", log)
	}
}

// TestOpen_FolderWithItsOwnKnotIsLeftAlone: a vault nested in another is
// its own: the outer knotd neither runs its notes nor deletes their
// records when the folder becomes a vault of its own.
func TestOpen_FolderWithItsOwnKnotIsLeftAlone(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("top.md", "# Top\n")
	e.write("inner/n.md", "# Inner\n")
	if sum := e.onceFresh(); sum.Ran != 2 {
		t.Fatalf("runs = %v", ran(sum))
	}
	e.write("inner/.knot/config.yaml", "")
	e.write("inner/n.md", "# Inner, edited\n")
	e.write("inner/new.md", "# New\n")
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("the outer vault ran %v in the nested one", ran(sum))
	}
	v := e.open()
	if _, ok := record(t, v, "inner/n.md"); !ok {
		t.Error("the outer vault forgot inner/n.md (a nested vault is no deletion)")
	}
}

// TestOnce_NewDeviceRebuildsFromTieOffs: a new device (a state directory
// of its own, a fresh clone of a vault whose heartbeats git leaves out)
// runs exactly the notes changed since their last answer.
func TestOnce_NewDeviceRebuildsFromTieOffs(t *testing.T) {
	e := answeredVault(t)
	mustDo(t, os.RemoveAll(e.abs(".knot/devices"))) // as git leaves them out of a clone
	fresh := e.otherDevice()
	if got := ran(fresh.onceFresh()); !slices.Equal(got, []string{"Modified b.md"}) {
		t.Errorf("the new device ran %v", got)
	}
}

// TestWatch_StopsOnStateDamage: damage the daemon meets while it runs
// stops it with ErrStateDamaged (a service manager restarts it), the store
// is moved aside as it stops, and the next start rebuilds from the vault.
func TestWatch_StopsOnStateDamage(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	for i := range 40 {
		e.write(fmt.Sprintf("n%02d.md", i), fmt.Sprintf("# Note %d\n", i))
	}
	e.onceFresh()
	opts, log := e.logged()
	v, err := Open(e.root, opts)
	mustDo(t, err)
	w := e.watch(v, WatchOptions{})
	// Damage the pages in place, as a failing disk would.
	f, err := os.OpenFile(e.statePath(), os.O_RDWR, 0)
	mustDo(t, err)
	fi, err := f.Stat()
	mustDo(t, err)
	junk := bytes.Repeat([]byte{0xa5}, 97)
	for off := int64(2 * 4096); off+int64(len(junk)) < fi.Size(); off += 4096 {
		_, err := f.WriteAt(junk, off+64)
		mustDo(t, err)
	}
	mustDo(t, f.Close())
	for i := range 40 {
		e.write(fmt.Sprintf("n%02d.md", i), fmt.Sprintf("# Note %d, edited\n", i))
	}
	var werr error
	select {
	case werr = <-w.done:
		w.mu.Lock()
		w.stopped = true // Watch returned: the harness's stop has nothing to wait for
		w.mu.Unlock()
	case <-time.After(waitTimeout):
		t.Fatal("the daemon did not stop on a damaged state store")
	}
	if !errors.Is(werr, ErrStateDamaged) {
		t.Fatalf("Watch = %v; want ErrStateDamaged", werr)
	}
	mustDo(t, v.Close())
	if aside, _ := filepath.Glob(e.statePath() + ".damaged-*"); len(aside) != 1 || !strings.Contains(log.String(), "the state store is damaged") {
		t.Errorf("moved aside: %v; log:\n%s", aside, log)
	}
	if sum := e.onceFresh(); sum.Ran != 40 {
		t.Errorf("the restart ran %d; want every edit once (changed since its last answer)", sum.Ran)
	}
}

// rootPage returns the page number of the root bucket of the bbolt file
// b, and its page size, from its newer meta page: after the 16-byte page
// header, magic, version, page size and flags (4 bytes each), then the
// root bucket's page id; the transaction id is at 48.
func rootPage(t *testing.T, b []byte) (root, pageSize int) {
	t.Helper()
	const hdr = 16
	le := binary.LittleEndian
	pageSize = int(le.Uint32(b[hdr+8:]))
	if pageSize < 512 || len(b) < 2*pageSize {
		t.Fatalf("page size %d in a state file of %d bytes", pageSize, len(b))
	}
	var txid uint64
	for i := range 2 {
		m := b[i*pageSize+hdr:]
		if le.Uint32(m) != 0xED0CDAED {
			t.Fatalf("meta page %d has no bbolt magic", i)
		}
		if id := le.Uint64(m[48:]); i == 0 || id > txid {
			root, txid = int(le.Uint64(m[16:])), id
		}
	}
	return root, pageSize
}
