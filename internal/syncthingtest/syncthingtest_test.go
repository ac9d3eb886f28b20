package syncthingtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// startPair starts a pair on two fresh folders.
func startPair(t *testing.T) (a, b *Device) {
	t.Helper()
	return StartPair(t, t.TempDir(), t.TempDir())
}

// write writes content to the folder-relative slash path rel in d's folder.
func write(t *testing.T, d *Device, rel, content string) {
	t.Helper()
	path := filepath.Join(d.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// read returns the content of rel in d's folder.
func read(t *testing.T, d *Device, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hasContent is an Await condition: rel in d's folder holds want.
func hasContent(d *Device, rel, want string) func() error {
	return func() error {
		b, err := os.ReadFile(filepath.Join(d.Dir, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		if string(b) != want {
			return fmt.Errorf("%s on %s is %q, want %q", rel, d.Name, b, want)
		}
		return nil
	}
}

// reconnect is Reconnect, timed in the log.
func reconnect(t *testing.T, a, b *Device) {
	t.Helper()
	began := time.Now()
	Reconnect(t, a, b)
	t.Logf("Reconnect took %v", time.Since(began).Round(time.Millisecond))
}

// disconnect is Disconnect, timed in the log.
func disconnect(t *testing.T, a, b *Device) {
	t.Helper()
	began := time.Now()
	Disconnect(t, a, b)
	t.Logf("Disconnect took %v", time.Since(began).Round(time.Millisecond))
}

// conflicts returns the conflict copies in d's folder.
func conflicts(t *testing.T, d *Device) []string {
	t.Helper()
	c, err := ConflictCopies(d.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// synced is Synced, timed in the log.
func synced(t *testing.T, a, b *Device) {
	t.Helper()
	began := time.Now()
	Synced(t, a, b)
	t.Logf("Synced took %v", time.Since(began).Round(time.Millisecond))
}

func TestPair_FilesReachTheOtherSide(t *testing.T) {
	a, b := startPair(t)

	// Through the watcher alone, with no barrier.
	began := time.Now()
	write(t, a, "notes/from-a.md", "# from A\n")
	Await(t, "A's note on B", hasContent(b, "notes/from-a.md", "# from A\n"))
	t.Logf("A -> B by the watcher in %v", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	write(t, b, "from-b.md", "# from B\n")
	Await(t, "B's note on A", hasContent(a, "from-b.md", "# from B\n"))
	t.Logf("B -> A by the watcher in %v", time.Since(began).Round(time.Millisecond))

	// Through the barrier: both directions, an edit and a deletion.
	write(t, a, "notes/from-a.md", "# from A, edited\n")
	write(t, b, "deep/er/b2.md", "# B again\n")
	if err := os.Remove(filepath.Join(b.Dir, "from-b.md")); err != nil {
		t.Fatal(err)
	}
	synced(t, a, b)
	if got := read(t, b, "notes/from-a.md"); got != "# from A, edited\n" {
		t.Errorf("B's notes/from-a.md = %q after Synced", got)
	}
	if got := read(t, a, "deep/er/b2.md"); got != "# B again\n" {
		t.Errorf("A's deep/er/b2.md = %q after Synced", got)
	}
	if _, err := os.Stat(filepath.Join(a.Dir, "from-b.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("from-b.md deleted on B is still on A after Synced: %v", err)
	}
	for _, d := range []*Device{a, b} {
		if c := conflicts(t, d); len(c) != 0 {
			t.Errorf("conflict copies on %s: %v", d.Name, c)
		}
	}
	// A second barrier right away has nothing to wait for but its markers.
	synced(t, a, b)
}

// TestPair_ConcurrentEditsMakeAConflictCopy edits one note differently on
// both devices while they are disconnected: Syncthing keeps the newer
// edit (by modification time) under the note's name on both sides, and
// the older one as a conflict copy, also on both sides. In 1.19.2 the
// copy's name ends with the short ID of the device whose edit won (B),
// not of the one whose edit it holds.
func TestPair_ConcurrentEditsMakeAConflictCopy(t *testing.T) {
	a, b := startPair(t)
	write(t, a, "plan.md", "# plan\n")
	synced(t, a, b)

	disconnect(t, a, b)
	write(t, a, "plan.md", "# plan\n\nedited on A\n")
	write(t, b, "plan.md", "# plan\n\nedited on B\n")
	older, newer := time.Now().Add(-2*time.Minute), time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(a.Dir, "plan.md"), older, older); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(b.Dir, "plan.md"), newer, newer); err != nil {
		t.Fatal(err)
	}
	// Each side records its own edit before they meet again.
	a.Scan(t)
	b.Scan(t)
	reconnect(t, a, b)
	synced(t, a, b)

	for _, d := range []*Device{a, b} {
		if got := read(t, d, "plan.md"); got != "# plan\n\nedited on B\n" {
			t.Errorf("%s's plan.md = %q; want B's newer edit", d.Name, got)
		}
		c := conflicts(t, d)
		if len(c) != 1 {
			t.Fatalf("conflict copies on %s: %v; want one", d.Name, c)
		}
		if got := read(t, d, c[0]); got != "# plan\n\nedited on A\n" {
			t.Errorf("%s's conflict copy %s = %q; want A's older edit", d.Name, c[0], got)
		}
		if want := "-" + b.ID[:7] + ".md"; !strings.HasPrefix(c[0], "plan.sync-conflict-") || !strings.HasSuffix(c[0], want) {
			t.Errorf("%s's conflict copy is %s; want plan.sync-conflict-<date>-<time>%s", d.Name, c[0], want)
		}
		t.Logf("%s: conflict copy %s", d.Name, c[0])
	}
	if ca, cb := conflicts(t, a), conflicts(t, b); !reflect.DeepEqual(ca, cb) {
		t.Errorf("conflict copies differ: A %v, B %v", ca, cb)
	}
}

// TestPair_IdenticalConcurrentCreateMakesNoConflictCopy is the experiment
// "both devices create the same path with identical content while apart":
// Syncthing 1.19.2 makes no conflict copy, whether the two files' times
// are equal or not, and whether or not each side had indexed its file
// before they met again. The two versions are concurrent, but the one that
// loses (the older) has the same blocks as the winner, so its device only
// takes over the winner's metadata: the modification time ends up the
// winner's on both sides.
func TestPair_IdenticalConcurrentCreateMakesNoConflictCopy(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mtimeA     time.Duration // before now; 0: as written
		mtimeB     time.Duration
		scan       bool   // each side indexes its file before Reconnect
		wantWinner string // whose modification time both sides end with
	}{
		{"B newer", 2 * time.Minute, time.Minute, true, "B"},
		{"A newer", time.Minute, 2 * time.Minute, true, "A"},
		{"same time", time.Minute, time.Minute, true, ""},
		{"as written, not yet indexed", 0, 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := startPair(t)
			write(t, a, "seed.md", "seed\n")
			synced(t, a, b)

			disconnect(t, a, b)
			const content = "# same\n\nwritten on both devices alike\n"
			now := time.Now().Truncate(time.Second)
			mtime := map[*Device]time.Time{a: now.Add(-tc.mtimeA), b: now.Add(-tc.mtimeB)}
			for _, d := range []*Device{a, b} {
				write(t, d, "notes/same.md", content)
				path := filepath.Join(d.Dir, "notes", "same.md")
				if tc.mtimeA != 0 {
					if err := os.Chtimes(path, mtime[d], mtime[d]); err != nil {
						t.Fatal(err)
					}
				} else {
					fi, err := os.Stat(path)
					if err != nil {
						t.Fatal(err)
					}
					mtime[d] = fi.ModTime()
				}
				if tc.scan {
					d.Scan(t)
				}
			}
			reconnect(t, a, b)
			synced(t, a, b)

			for _, d := range []*Device{a, b} {
				if c := conflicts(t, d); len(c) != 0 {
					t.Errorf("conflict copies on %s: %v; want none", d.Name, c)
				}
				if got := read(t, d, "notes/same.md"); got != content {
					t.Errorf("%s's notes/same.md = %q", d.Name, got)
				}
			}
			fa, err := os.Stat(filepath.Join(a.Dir, "notes", "same.md"))
			if err != nil {
				t.Fatal(err)
			}
			fb, err := os.Stat(filepath.Join(b.Dir, "notes", "same.md"))
			if err != nil {
				t.Fatal(err)
			}
			const stamp = "15:04:05.000000000"
			t.Logf("mtimes after sync: A %v, B %v (written as A %v, B %v)",
				fa.ModTime().Format(stamp), fb.ModTime().Format(stamp),
				mtime[a].Format(stamp), mtime[b].Format(stamp))
			switch tc.wantWinner {
			case "A", "B":
				want := mtime[a]
				if tc.wantWinner == "B" {
					want = mtime[b]
				}
				if !fa.ModTime().Equal(want) || !fb.ModTime().Equal(want) {
					t.Errorf("mtimes after sync: A %v, B %v; want both %v (%s's)", fa.ModTime(), fb.ModTime(), want, tc.wantWinner)
				}
			default:
				if !fa.ModTime().Equal(fb.ModTime()) {
					t.Errorf("mtimes after sync differ: A %v, B %v", fa.ModTime(), fb.ModTime())
				}
			}
		})
	}
}

// TestPair_StoppedDeviceCatchesUp stops B, changes A's folder, and starts
// B again: B reconnects and pulls what it missed.
func TestPair_StoppedDeviceCatchesUp(t *testing.T) {
	a, b := startPair(t)
	write(t, a, "before.md", "before\n")
	synced(t, a, b)

	b.Stop(t)
	write(t, a, "while-b-was-off.md", "missed\n")
	if err := os.Remove(filepath.Join(a.Dir, "before.md")); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	b.Start(t)
	WaitConnected(t, a, b)
	t.Logf("B restarted and reconnected in %v", time.Since(began).Round(time.Millisecond))
	synced(t, a, b)
	if got := read(t, b, "while-b-was-off.md"); got != "missed\n" {
		t.Errorf("B's while-b-was-off.md = %q", got)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "before.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("before.md, deleted on A while B was off, is still on B: %v", err)
	}
}

func TestConflictCopies(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{
		"a.md",
		"a.sync-conflict-20260101-120000-ABCDEFG.md",
		"sub/deeper/b.sync-conflict-20260102-130000-HIJKLMN.md",
		"sub/b.md",
		".stversions/c.sync-conflict-20260101-120000-ABCDEFG.md",
	} {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ConflictCopies(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a.sync-conflict-20260101-120000-ABCDEFG.md",
		"sub/deeper/b.sync-conflict-20260102-130000-HIJKLMN.md",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ConflictCopies = %q; want %q", got, want)
	}
	if _, err := ConflictCopies(filepath.Join(dir, "missing")); err == nil {
		t.Error("ConflictCopies of a missing directory: no error")
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		line, want string
		ok         bool
	}{
		{`syncthing v1.19.2-ds1 "Fermium Flea" (go1.19.8 linux-amd64) debian@debian 2023-04-09 10:47:16 UTC`, "1.19.2", true},
		{`syncthing v1.19.2 "Fermium Flea" (go1.17.6 linux-amd64) builder@github.syncthing.net 2022-04-05 06:01:45 UTC`, "1.19.2", true},
		{`syncthing v1.27.0 "Gold Grasshopper" (go1.21.5 linux-amd64)`, "1.27.0", true},
		{`syncthing v`, "", false},
		{`something else`, "", false},
	} {
		got, ok := parseVersion(tc.line)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseVersion(%q) = %q, %v; want %q, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}
