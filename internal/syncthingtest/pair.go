package syncthingtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BarrierDir is the folder-relative directory where Synced writes its
// marker files, one per device and call: ".stbarrier/.A-<random>". knotd
// ignores it, as it ignores every dot-directory. The markers are left in
// place (two small files per call).
const BarrierDir = ".stbarrier"

// StartPair starts two Syncthing devices, "A" and "B", that share the
// folder FolderID: dirA on A and dirB on B (both must exist; they need
// not be empty). It returns once both are up and connected to each other,
// within seconds. Both are stopped when the test ends, and their logs
// printed if it failed.
//
// Each device gets its own t.TempDir() as its home, with a configuration
// that keeps everything on loopback (see the package comment) and a
// folder with the file system watcher on, a 1s watcher delay and a 10s
// rescan interval, so that a change reaches the other device within a few
// seconds. StartPair skips the test when Syncthing is unavailable (see
// Binary).
func StartPair(t testing.TB, dirA, dirB string) (a, b *Device) {
	t.Helper()
	bin := Binary(t)
	began := time.Now()
	for _, dir := range []string{dirA, dirB} {
		if fi, err := os.Stat(dir); err != nil {
			t.Fatalf("StartPair: %v", err)
		} else if !fi.IsDir() {
			t.Fatalf("StartPair: %s is not a directory", dir)
		}
	}
	// All four at once, so that they differ.
	ports, err := freePorts(4)
	if err != nil {
		t.Fatalf("StartPair: %v", err)
	}
	// Both at once: generating a device's keys and GUI password hash
	// takes a while.
	var errB error
	generated := make(chan struct{})
	go func() {
		defer close(generated)
		b, errB = newDevice(t, bin, "B", dirB, ports[2], ports[3])
	}()
	a, err = newDevice(t, bin, "A", dirA, ports[0], ports[1])
	<-generated
	if err := errors.Join(err, errB); err != nil {
		t.Fatalf("StartPair: %v", err)
	}
	a.dialer = true
	a.peer, b.peer = b, a
	if err := configure(a.Home, a, b); err != nil {
		t.Fatalf("StartPair: device A: %v", err)
	}
	if err := configure(b.Home, b, a); err != nil {
		t.Fatalf("StartPair: device B: %v", err)
	}

	t.Cleanup(func() {
		// Together: each takes a second to close its listener.
		errB := make(chan error, 1)
		go func() { errB <- b.stop() }()
		if err := errors.Join(a.stop(), <-errB); err != nil {
			t.Errorf("StartPair cleanup: %v", err)
		}
		if t.Failed() {
			for _, d := range []*Device{a, b} {
				t.Logf("syncthing %s (%s) log, %s:\n%s", d.Name, d.ID, d.LogPath(), d.logTail())
			}
		}
	})

	// Both at once; A dials B as soon as it starts, and if B was not
	// listening yet it is made to dial again once B is up, rather than
	// 5s later.
	lap := time.Now()
	for _, d := range []*Device{b, a} {
		if err := d.start(); err != nil {
			t.Fatalf("StartPair: %v", err)
		}
	}
	for _, d := range []*Device{b, a} {
		if err := poll(Timeout, d.ready); err != nil {
			t.Fatalf("StartPair: syncthing %s did not come up: %v", d.Name, err)
		}
	}
	up := time.Since(lap)
	if err := b.nudgeDialer(); err != nil {
		t.Fatalf("StartPair: %v", err)
	}
	if err := waitConnected(a, b); err != nil {
		t.Fatalf("StartPair: %v\n%s", err, report(a, b))
	}
	t.Logf("syncthingtest: A (%s, GUI %s) and B (%s, GUI %s) ready in %v (both up in %v)",
		a.ID[:7], a.GUIURL, b.ID[:7], b.GUIURL, time.Since(began).Round(time.Millisecond), up.Round(time.Millisecond))
	return a, b
}

// WaitConnected waits until a and b are connected to each other.
func WaitConnected(t testing.TB, a, b *Device) {
	t.Helper()
	if err := waitConnected(a, b); err != nil {
		t.Fatalf("%v\n%s", err, report(a, b))
	}
}

func waitConnected(a, b *Device) error {
	return poll(Timeout, func() error {
		for _, p := range [][2]*Device{{a, b}, {b, a}} {
			c, err := p[0].connectionTo(p[1])
			if err != nil {
				return err
			}
			if !c.Connected {
				return fmt.Errorf("syncthing %s not connected to %s", p[0].Name, p[1].Name)
			}
		}
		return nil
	})
}

// Disconnect pauses each of a and b on the other, as if the two devices
// had lost touch, and waits until neither is connected. Changes made on
// either side meanwhile stay there until Reconnect.
func Disconnect(t testing.TB, a, b *Device) {
	t.Helper()
	if b.dialer {
		// The dialer first: were it the last, it would dial again in
		// between, be refused, and soon have to wait 5s for a new dial
		// (Syncthing cools down a device dialled too often).
		a, b = b, a
	}
	a.Pause(t, b)
	b.Pause(t, a)
	err := poll(Timeout, func() error {
		for _, p := range [][2]*Device{{a, b}, {b, a}} {
			c, err := p[0].connectionTo(p[1])
			if err != nil {
				return err
			}
			if c.Connected || !c.Paused {
				return fmt.Errorf("syncthing %s: connected %v, paused %v to %s", p[0].Name, c.Connected, c.Paused, p[1].Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Disconnect: %v\n%s", err, report(a, b))
	}
}

// Reconnect undoes Disconnect and waits until a and b are connected
// again; what changed meanwhile then starts to sync (Synced waits for
// it). That takes milliseconds, or up to 5s when the devices last
// connected less than 5s ago and have done so often in the last two
// minutes: Syncthing then cools down before it dials again.
func Reconnect(t testing.TB, a, b *Device) {
	t.Helper()
	if a.dialer {
		// The dialer last, so that its dial, at once, is not refused.
		a, b = b, a
	}
	a.Resume(t, b)
	b.Resume(t, a)
	if err := waitConnected(a, b); err != nil {
		t.Fatalf("Reconnect: %v\n%s", err, report(a, b))
	}
}

// Synced is a barrier: it returns once everything written into either
// device's folder before the call has reached the other device, conflict
// copies included, or fails the test after Timeout with both devices'
// REST status. The devices must be connected.
//
// It writes a marker file on each side under BarrierDir, makes both
// devices rescan (so nothing waits for the watcher), and waits until each
// marker is on the other side's disk and, through the REST API, each
// device has the other's whole index (/rest/db/completion sequences),
// needs nothing (/rest/db/status) and is idle. Then both rescan once more:
// a conflict copy made while pulling is only indexed after the pull, so
// if a rescan finds anything new the wait starts over.
func Synced(t testing.TB, a, b *Device) {
	t.Helper()
	for _, p := range [][2]*Device{{a, b}, {b, a}} {
		c, err := p[0].connectionTo(p[1])
		if err != nil {
			t.Fatalf("Synced: %v", err)
		}
		if !c.Connected {
			t.Fatalf("Synced: syncthing %s is not connected to %s (paused %v; Reconnect or Start first)\n%s",
				p[0].Name, p[1].Name, c.Paused, report(a, b))
		}
	}
	ma, err := writeMarker(a)
	if err != nil {
		t.Fatalf("Synced: %v", err)
	}
	mb, err := writeMarker(b)
	if err != nil {
		t.Fatalf("Synced: %v", err)
	}
	deadline := time.Now().Add(Timeout)
	for round := 1; ; round++ {
		if err := scanBoth(a, b); err != nil {
			t.Fatalf("Synced: %v\n%s", err, report(a, b))
		}
		var seqA, seqB int64
		err := poll(time.Until(deadline), func() error {
			var err error
			seqA, seqB, err = converged(a, b, ma, mb)
			return err
		})
		if err != nil {
			t.Fatalf("Synced: not in sync (round %d): %v\n%s", round, err, report(a, b))
		}
		if err := scanBoth(a, b); err != nil {
			t.Fatalf("Synced: %v\n%s", err, report(a, b))
		}
		nowA, errA := a.completionOf(a)
		nowB, errB := b.completionOf(b)
		if err := errors.Join(errA, errB); err != nil {
			t.Fatalf("Synced: %v", err)
		}
		if nowA.Sequence == seqA && nowB.Sequence == seqB {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Synced: the folders kept changing for %v\n%s", Timeout, report(a, b))
		}
	}
}

// marker is one file Synced wrote: its folder-relative path and content.
type marker struct {
	owner   *Device
	rel     string
	content []byte
}

// writeMarker writes a new marker file into d's folder.
func writeMarker(d *Device) (marker, error) {
	token, err := randomString(8)
	if err != nil {
		return marker{}, err
	}
	m := marker{
		owner:   d,
		rel:     BarrierDir + "/." + d.Name + "-" + token,
		content: []byte("syncthingtest barrier " + token + " from " + d.Name + "\n"),
	}
	dir := filepath.Join(d.Dir, BarrierDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return marker{}, fmt.Errorf("barrier marker: %w", err)
	}
	if err := os.WriteFile(filepath.Join(d.Dir, filepath.FromSlash(m.rel)), m.content, 0o644); err != nil {
		return marker{}, fmt.Errorf("barrier marker: %w", err)
	}
	return m, nil
}

// scanBoth rescans a's and b's folders, both at once.
func scanBoth(a, b *Device) error {
	errB := make(chan error, 1)
	go func() { errB <- b.scan() }()
	errA := a.scan()
	return errors.Join(errA, <-errB)
}

// converged returns nil, and the devices' local index sequences, when each
// of a and b has the other's marker on disk and the other's whole index,
// needs nothing and is idle.
func converged(a, b *Device, ma, mb marker) (seqA, seqB int64, err error) {
	seq := map[*Device]int64{}
	for _, p := range []struct {
		self, peer *Device
		m          marker
	}{{a, b, mb}, {b, a, ma}} {
		got, err := os.ReadFile(filepath.Join(p.self.Dir, filepath.FromSlash(p.m.rel)))
		if err != nil {
			return 0, 0, fmt.Errorf("%s's barrier marker not on %s yet: %w", p.peer.Name, p.self.Name, err)
		}
		if !bytes.Equal(got, p.m.content) {
			return 0, 0, fmt.Errorf("%s's barrier marker on %s is %q, not %q", p.peer.Name, p.self.Name, got, p.m.content)
		}
		st, err := p.self.FolderStatus()
		if err != nil {
			return 0, 0, err
		}
		if st.State != "idle" || st.NeedTotalItems != 0 || st.NeedDeletes != 0 {
			return 0, 0, fmt.Errorf("syncthing %s: state %q, needs %d items (%d deletions), %d pull errors",
				p.self.Name, st.State, st.NeedTotalItems, st.NeedDeletes, st.Errors)
		}
		local, err := p.self.completionOf(p.self)
		if err != nil {
			return 0, 0, err
		}
		seen, err := p.peer.completionOf(p.self)
		if err != nil {
			return 0, 0, err
		}
		if seen.Sequence != local.Sequence {
			return 0, 0, fmt.Errorf("syncthing %s has %s's index up to sequence %d of %d",
				p.peer.Name, p.self.Name, seen.Sequence, local.Sequence)
		}
		if seen.NeedItems != 0 || seen.NeedDeletes != 0 {
			return 0, 0, fmt.Errorf("syncthing %s sees %s needing %d items (%d deletions)",
				p.peer.Name, p.self.Name, seen.NeedItems, seen.NeedDeletes)
		}
		seq[p.self] = local.Sequence
	}
	return seq[a], seq[b], nil
}

// report describes both devices' state through their REST APIs, for a
// failure message.
func report(a, b *Device) string {
	var sb strings.Builder
	for _, p := range [][2]*Device{{a, b}, {b, a}} {
		d, peer := p[0], p[1]
		fmt.Fprintf(&sb, "syncthing %s (%s, GUI %s, home %s):\n", d.Name, d.ID, d.GUIURL, d.Home)
		if err := d.exited(); err != nil {
			fmt.Fprintf(&sb, "  %v\n", err)
			continue
		}
		if c, err := d.connectionTo(peer); err != nil {
			fmt.Fprintf(&sb, "  connection: %v\n", err)
		} else {
			fmt.Fprintf(&sb, "  connection to %s: connected %v, paused %v, address %q\n", peer.Name, c.Connected, c.Paused, c.Address)
		}
		if st, err := d.FolderStatus(); err != nil {
			fmt.Fprintf(&sb, "  folder status: %v\n", err)
		} else {
			j, _ := json.Marshal(st)
			fmt.Fprintf(&sb, "  folder status: %s\n", j)
		}
		for _, dev := range []*Device{d, peer} {
			if c, err := d.completionOf(dev); err != nil {
				fmt.Fprintf(&sb, "  completion of %s: %v\n", dev.Name, err)
			} else {
				fmt.Fprintf(&sb, "  completion of %s as seen here: %.1f%%, need %d items (%d deletions), sequence %d\n",
					dev.Name, c.Completion, c.NeedItems, c.NeedDeletes, c.Sequence)
			}
		}
	}
	return sb.String()
}

// Await calls cond every few milliseconds until it returns nil, and fails
// the test with cond's last error, saying what was awaited, if that takes
// longer than Timeout.
func Await(t testing.TB, what string, cond func() error) {
	t.Helper()
	if err := poll(Timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// ConflictCopies returns the paths, relative to dir and slash-separated,
// of every Syncthing conflict copy under dir ("note.sync-conflict-
// 20260101-120000-ABCDEFG.md"), in lexical order. It skips .stversions,
// where Syncthing's file versioning keeps old copies, and Syncthing's own
// temporary files (".syncthing.<name>.tmp"): a copy still being
// downloaded, or one whose download failed because the copy was removed
// on the other device meanwhile (Syncthing keeps those for a day, to
// reuse their blocks).
func ConflictCopies(dir string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && e.Name() == ".stversions" {
			return filepath.SkipDir
		}
		name := e.Name()
		temp := strings.HasSuffix(name, ".tmp") && (strings.HasPrefix(name, ".syncthing.") || strings.HasPrefix(name, "~syncthing~"))
		if !e.IsDir() && !temp && strings.Contains(name, ".sync-conflict-") {
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look for conflict copies: %w", err)
	}
	return found, nil
}
