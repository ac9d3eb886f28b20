package transcript

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

var pruneNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// runID returns the i-th test run id.
func runID(i int) string { return fmt.Sprintf("01936f4e-1a2b-7c3d-8e4f-%012x", i) }

// writeRun writes a closed transcript for run id in dir and sets its
// modification time to age before pruneNow.
func writeRun(t *testing.T, dir, id string, age time.Duration) string {
	t.Helper()
	r, err := Create(dir, id, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustRecord(t, r, startedPayload())
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	setAge(t, r.path, age)
	return r.path
}

func setAge(t *testing.T, path string, age time.Duration) {
	t.Helper()
	mt := pruneNow.Add(-age)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func TestPrune(t *testing.T) {
	day := 24 * time.Hour
	ages := []time.Duration{30 * time.Second, day / 2, 2 * day, 5 * day, 10 * day, 40 * day}
	for _, tc := range []struct {
		name            string
		keepDays, count int
		removed         []int // indexes into ages
	}{
		{"no limits", 0, 0, nil},
		{"days", 7, 0, []int{4, 5}},
		{"count", 0, 2, []int{2, 3, 4, 5}},
		{"days and count", 3, 4, []int{3, 4, 5}},
		{"count keeps the active file", 0, 1, []int{1, 2, 3, 4, 5}},
		{"everything old", 1, 0, []int{2, 3, 4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			paths := make([]string, len(ages))
			for i, age := range ages {
				paths[i] = writeRun(t, dir, runID(i), age)
			}
			removed, err := Prune(dir, tc.keepDays, tc.count, pruneNow)
			if err != nil {
				t.Fatalf("Prune = %v", err)
			}
			var want []string
			for _, i := range tc.removed {
				want = append(want, paths[i])
			}
			slices.Sort(removed)
			if !slices.Equal(removed, want) {
				t.Errorf("Prune(%d days, %d) removed %q; want %q", tc.keepDays, tc.count, removed, want)
			}
			for i, p := range paths {
				_, err := os.Stat(p)
				if gone := errors.Is(err, fs.ErrNotExist); gone != slices.Contains(tc.removed, i) {
					t.Errorf("%s (age %v) gone = %v", filepath.Base(p), ages[i], gone)
				}
			}
		})
	}
}

func TestPrune_KeepsRunsBeingWritten(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, runID(1), 10*time.Second) // recent, and surplus
	writeRun(t, dir, runID(2), 5*time.Second)
	r, err := Create(dir, runID(3), nil) // open, and old
	if err != nil {
		t.Fatal(err)
	}
	mustRecord(t, r, startedPayload())
	setAge(t, r.path, 40*24*time.Hour)

	removed, err := Prune(dir, 1, 1, pruneNow)
	if err != nil || len(removed) != 0 {
		t.Errorf("Prune = %q, %v; want nothing removed", removed, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	setAge(t, r.path, 40*24*time.Hour)
	removed, err = Prune(dir, 1, 0, pruneNow)
	if err != nil || !slices.Equal(removed, []string{r.path}) {
		t.Errorf("Prune after Close = %q, %v; want %s removed", removed, err, r.path)
	}
}

func TestPrune_OnlyTranscripts(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	old := 100 * 24 * time.Hour
	target := writeRun(t, outside, runID(9), old)
	for _, name := range []string{"notes.txt", "x.jsonl", "01936F4E-1A2B-7C3D-8E4F-000000000001.jsonl", runID(2) + ".json"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		setAge(t, p, old)
	}
	if err := os.Mkdir(filepath.Join(dir, runID(3)+Ext), 0o700); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if err := os.Symlink(target, filepath.Join(dir, runID(4)+Ext)); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Prune(dir, 1, 1, pruneNow)
	if err != nil || len(removed) != 0 {
		t.Errorf("Prune = %q, %v; want nothing removed", removed, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := 6; runtime.GOOS != "windows" && len(entries) != want {
		t.Errorf("%d entries left; want %d", len(entries), want)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the symlink's target: %v", err)
	}
}

func TestPrune_MissingDir(t *testing.T) {
	removed, err := Prune(filepath.Join(t.TempDir(), "none"), 1, 1, pruneNow)
	if err != nil || removed != nil {
		t.Errorf("Prune(missing) = %q, %v", removed, err)
	}
}

func TestRemoveIdle_ChangedFile(t *testing.T) {
	dir := t.TempDir()
	p := writeRun(t, dir, runID(1), time.Hour)
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if ok, err := removeIdle(p, info); ok || err != nil {
		t.Errorf("removeIdle(gone) = %v, %v", ok, err)
	}
	writeRun(t, dir, runID(1), 2*time.Hour) // a new file under the old name
	if ok, err := removeIdle(p, info); ok || err != nil {
		t.Errorf("removeIdle(replaced) = %v, %v; want kept", ok, err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("the new file: %v", err)
	}
	// A file written to after the listing is kept too.
	info, err = os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Reopen(dir, runID(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustRecord(t, r, UserMessage{Prompt: "more"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if ok, err := removeIdle(p, info); ok || err != nil {
		t.Errorf("removeIdle(appended to) = %v, %v; want kept", ok, err)
	}
}
