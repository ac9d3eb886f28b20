package vault

import (
	"bytes"
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/state"
)

// snapshot returns every file under the vault (the devices' heartbeats
// aside: they say when knotd last ran) with its bytes.
func (e *env) snapshot() map[string]string {
	e.t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.root, p)
		if d.IsDir() {
			if filepath.ToSlash(rel) == ".knot/devices" {
				return fs.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	mustDo(e.t, err)
	return files
}

// storeState returns every record and journal entry of the store.
func (e *env) storeState() (map[string]state.Record, int) {
	e.t.Helper()
	s, err := openStoreOnly(e)
	mustDo(e.t, err)
	defer s.Close()
	recs := map[string]state.Record{}
	mustDo(e.t, s.ForEach(func(r state.Record) error { recs[r.Path] = r; return nil }))
	ps, err := s.Pendings()
	mustDo(e.t, err)
	return recs, len(ps)
}

// TestDryRun_PrintsPromptsAndChangesNothing: --dry-run shows each pending
// strand's event and full prompt, and writes no strand (not even the
// knot_session a run would add), no tie-off and no state; a journaled run
// is left for the next real start.
func TestDryRun_PrintsPromptsAndChangesNothing(t *testing.T) {
	e := newEnv(t)
	e.write("a.md", "# A\n\nfirst\n")
	e.write("b.md", "# B\n")
	e.write("touched.md", "# T\n")
	p := journaledRun(t, e) // adopts the above; note.md's run is journaled, not appended
	e.write("a.md", "# A\n\nfirst\nsecond line\n")
	e.remove("b.md")
	later := time.Now().Add(time.Minute)
	mustDo(t, os.Chtimes(e.abs("touched.md"), later, later))
	e.write("new.md", "# New\n\nhello dry run\n")
	e.write("off.md", "---\nknot_mode: off\n---\n")
	e.write("bad.md", "---\n: [\n---\n")

	files := e.snapshot()
	recs, pendings := e.storeState()
	var out bytes.Buffer
	if err := DryRun(context.Background(), e.root, e.options(), OnceOptions{}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"1 finished runs were journaled",
		"==> Modified a.md (agent digest)\n## Event Context\nEvent: Modified\nStrand: a.md\n",
		"+second line",
		"==> Deleted b.md (agent digest)\n## Event Context\nEvent: Deleted\n",
		"The strand b.md was deleted",
		"==> Created new.md (agent digest)\n## Event Context\nEvent: Created\nStrand: new.md\n",
		"Session: ", "Fired-By: once",
		"hello dry run",
		"==> Created off.md: recorded without a run (knot_mode: off)",
		"==> Created bad.md: would fail without a run:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "touched.md") {
		t.Errorf("dry run lists a touched strand:\n%s", got)
	}
	if after := e.snapshot(); !maps.Equal(after, files) {
		t.Errorf("dry run changed the vault's files:\nbefore %q\nafter  %q", files, after)
	}
	recs2, pendings2 := e.storeState()
	if pendings2 != pendings || pendings != 1 {
		t.Errorf("journal entries %d -> %d; want 1 kept", pendings, pendings2)
	}
	if !maps.EqualFunc(recs, recs2, func(a, b state.Record) bool { return reflect.DeepEqual(a, b) }) {
		t.Errorf("dry run changed the state:\nbefore %+v\nafter  %+v", recs, recs2)
	}
	// A real pass then does what the dry run showed.
	sum := e.onceFresh()
	if sum.Ran != 4 || sum.Skipped != 1 {
		t.Errorf("the real pass: %+v; want a.md, b.md, new.md and bad.md run, off.md skipped", sum)
	}
	if secs := e.sections("note.md"); len(secs) != 1 || secs[0].RunID != p.RunID {
		t.Errorf("the journaled run was not recovered by the real start: %+v", secs)
	}
}

// TestDryRun_FirstContact: on a vault knotd has never seen, the dry run
// says what adoption would do and creates nothing, not even .knot/.
func TestDryRun_FirstContact(t *testing.T) {
	e := newEnv(t)
	e.write("a.md", "# A\n")
	e.write("sub/b.md", "# B\n")
	var out bytes.Buffer
	if err := DryRun(context.Background(), e.root, e.options(), OnceOptions{}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "first contact: knotd would adopt 2 notes"; !strings.Contains(out.String(), want) {
		t.Errorf("output %q lacks %q", out.String(), want)
	}
	if e.exists(".knot") {
		t.Error("the dry run created .knot/")
	}
}

// TestDryRun_All: with --all every strand is shown, changed or not.
func TestDryRun_All(t *testing.T) {
	e := newEnv(t)
	e.write("a.md", "# A\n")
	e.write("b.md", "# B\n")
	e.onceFresh()
	var out bytes.Buffer
	if err := DryRun(context.Background(), e.root, e.options(), OnceOptions{All: true}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"==> Modified a.md", "==> Modified b.md"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
