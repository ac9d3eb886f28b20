//go:build unix

package vault

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// An editor's save, reproduced with the system calls the editor makes.
type saveStrategy struct {
	name string
	save func(t *testing.T, e *env, rel, content string)
}

// writeNew creates path (which must not exist), writes content and fsyncs.
func writeNew(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	mustDo(t, err)
	_, err = f.WriteString(content)
	mustDo(t, err)
	mustDo(t, f.Sync())
	mustDo(t, f.Close())
}

var saveStrategies = []saveStrategy{
	{"vim", func(t *testing.T, e *env, rel, content string) {
		// vim probes whether it may create files in the directory
		// ("4913"), renames the original to its backup, writes a new
		// file, and keeps the backup (with 'backup' set).
		p := e.abs(rel)
		probe := filepath.Join(filepath.Dir(p), "4913")
		writeNew(t, probe, "")
		mustDo(t, os.Remove(probe))
		_ = os.Remove(p + "~")
		mustDo(t, os.Rename(p, p+"~"))
		writeNew(t, p, content)
		mustDo(t, os.Chmod(p, 0o644))
	}},
	{"vscode", func(t *testing.T, e *env, rel, content string) {
		// VS Code truncates the file and writes it in place.
		f, err := os.OpenFile(e.abs(rel), os.O_WRONLY|os.O_TRUNC, 0)
		mustDo(t, err)
		half := len(content) / 2
		_, err = f.WriteString(content[:half])
		mustDo(t, err)
		_, err = f.WriteString(content[half:])
		mustDo(t, err)
		mustDo(t, f.Close())
	}},
	{"syncthing", func(t *testing.T, e *env, rel, content string) {
		// Syncthing writes a hidden temporary file, sets its times and
		// renames it over the note.
		p := e.abs(rel)
		tmp := filepath.Join(filepath.Dir(p), ".syncthing."+filepath.Base(p)+".tmp")
		writeNew(t, tmp, content)
		mustDo(t, os.Chtimes(tmp, time.Now(), time.Now()))
		mustDo(t, os.Rename(tmp, p))
	}},
	{"atomic-rename", func(t *testing.T, e *env, rel, content string) {
		// A careful program writes a temporary file beside the note and
		// renames it into place.
		p := e.abs(rel)
		f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".*")
		mustDo(t, err)
		_, err = f.WriteString(content)
		mustDo(t, err)
		mustDo(t, f.Sync())
		mustDo(t, f.Close())
		mustDo(t, os.Rename(f.Name(), p))
	}},
	{"emacs", func(t *testing.T, e *env, rel, content string) {
		// Emacs holds a lock symlink ".#note.md" (dangling on purpose)
		// while the buffer is modified, renames the original to its
		// backup on the first save, writes the new file, then drops the
		// lock.
		p := e.abs(rel)
		lock := filepath.Join(filepath.Dir(p), ".#"+filepath.Base(p))
		mustDo(t, os.Symlink("me@host.4242:1700000000", lock))
		if _, err := os.Lstat(p + "~"); os.IsNotExist(err) {
			mustDo(t, os.Rename(p, p+"~"))
			writeNew(t, p, content)
		} else {
			mustDo(t, os.WriteFile(p, []byte(content), 0o644))
		}
		mustDo(t, os.Remove(lock))
	}},
}

// TestWatch_EditorSaveStrategies: whatever system calls an editor or a
// sync tool makes to save, a real change is one run, and a save that
// changes nothing, or a touch, is none.
func TestWatch_EditorSaveStrategies(t *testing.T) {
	for _, st := range saveStrategies {
		t.Run(st.name, func(t *testing.T) {
			e := newEnv(t)
			e.useConversing()
			e.writeSessions() // the saves race, and then carry, knotd's write
			e.write("notes/note.md", "# Note\n\nhello\n")
			v := e.open()
			w := e.watch(v, WatchOptions{}) // first contact: adopted, no run
			w.settle()
			if n := len(w.runs()); n != 0 {
				t.Fatalf("adoption ran %d times", n)
			}
			wantEvents := []string{}
			check := func(step string) {
				t.Helper()
				w.settle()
				if got := e.events("notes/note.md"); !slices.Equal(got, wantEvents) && !(len(got) == 0 && len(wantEvents) == 0) {
					t.Fatalf("after %s: tie-off events %v; want %v", step, got, wantEvents)
				}
				if got := len(w.runs()); got != len(wantEvents) {
					t.Fatalf("after %s: %d runs; want %d: %+v", step, got, len(wantEvents), w.runs())
				}
			}

			st.save(t, e, "notes/note.md", e.read("notes/note.md")+"a first change\n")
			wantEvents = append(wantEvents, "Modified")
			check("a save with a change")

			// knotd wrote knot_session into the note during that run; the
			// editor saves what it has now, unchanged.
			if !strings.Contains(e.read("notes/note.md"), "knot_session:") {
				t.Fatalf("the run did not give the note a session:\n%s", e.read("notes/note.md"))
			}
			st.save(t, e, "notes/note.md", e.read("notes/note.md"))
			check("a save without a change")

			later := time.Now().Add(time.Minute)
			mustDo(t, os.Chtimes(e.abs("notes/note.md"), later, later))
			check("a touch")

			st.save(t, e, "notes/note.md", e.read("notes/note.md")+"a second change\n")
			wantEvents = append(wantEvents, "Modified")
			check("a second save with a change")

			for _, junk := range []string{"notes/note.md~", "notes/4913", "notes/.#note.md"} {
				if _, ok := record(t, v, junk); ok {
					t.Errorf("%s was recorded as a strand", junk)
				}
			}
			entries, err := os.ReadDir(e.abs("notes"))
			mustDo(t, err)
			for _, de := range entries {
				if strings.HasSuffix(de.Name(), ".tieoff.md") && de.Name() != "note.tieoff.md" {
					t.Errorf("an editor's temporary file got a tie-off: %s", de.Name())
				}
			}
		})
	}
}
