//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/device"
	"github.com/knotd/knotd/internal/syncthingtest"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/stretchr/testify/require"
)

// Two devices share a vault through real Syncthing (Debian's, on
// loopback), each with its own knotd process, configuration and state
// directory, as on two machines.

// knotdDevice is one device's knotd: its vault folder (synced by its
// Syncthing), its XDG homes, the fake agent's record of calls, and the
// running process.
type knotdDevice struct {
	name                       string
	vault, xdgConfig, xdgState string
	agent                      string // the fake agent's state: its calls
	cmd                        *exec.Cmd
	log                        *testutil.Buffer
	done                       chan error
}

func newKnotdDevice(t *testing.T, name, vault string) *knotdDevice {
	t.Helper()
	d := &knotdDevice{name: name, vault: vault, xdgConfig: t.TempDir(), xdgState: t.TempDir(), agent: t.TempDir(), log: &testutil.Buffer{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("knotd on %s logged:\n%s", name, d.log)
		}
	})
	writeFile(t, filepath.Join(d.xdgConfig, "knotd", "config.yaml"), fmt.Sprintf(
		"default_agent: echo\nagents:\n  echo:\n    command: [%q]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, d.agent))
	return d
}

// start starts the device's knotd watching its vault.
func (d *knotdDevice) start(t *testing.T, args ...string) {
	t.Helper()
	d.cmd = knotdProcess(t, append(append([]string{"--debounce", "200ms", "--log-level", "debug"}, args...), d.vault)...)
	d.cmd.Env = append(d.cmd.Env, "XDG_CONFIG_HOME="+d.xdgConfig, "XDG_STATE_HOME="+d.xdgState)
	d.cmd.Stderr = d.log
	require.NoError(t, d.cmd.Start())
	d.done = make(chan error, 1)
	cmd, done := d.cmd, d.done
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
}

// stop stops the device's knotd with SIGTERM and checks it ended cleanly.
func (d *knotdDevice) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-d.done:
		d.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("knotd on %s after SIGTERM: %v\n%s", d.name, err, d.log)
		}
	case <-time.After(time.Minute):
		t.Fatalf("knotd on %s did not stop within a minute of SIGTERM\n%s", d.name, d.log)
	}
}

// id returns the device's knotd identity.
func (d *knotdDevice) id(t *testing.T) string {
	t.Helper()
	id, err := d.deviceID()
	require.NoError(t, err)
	return id
}

// deviceID returns the device's knotd identity, once knotd made it.
func (d *knotdDevice) deviceID() (string, error) {
	b, err := os.ReadFile(filepath.Join(d.xdgState, "knotd", "device.json"))
	if err != nil {
		return "", err
	}
	var dev struct{ ID string }
	if err := json.Unmarshal(b, &dev); err != nil {
		return "", err
	}
	return dev.ID, nil
}

// claimsIn waits until d's heartbeat in the vault folder dir claims the
// vault.
func (d *knotdDevice) claimsIn(t *testing.T, dir string) {
	t.Helper()
	syncthingtest.Await(t, d.name+"'s claim in "+dir, func() error {
		id, err := d.deviceID()
		if err != nil {
			return err
		}
		return claims(dir, id)
	})
}

// calls returns how many runs the device's agent made.
func (d *knotdDevice) calls(t *testing.T) int {
	t.Helper()
	calls, err := fakeagent.Calls(d.agent)
	require.NoError(t, err)
	return len(calls)
}

// claims reports whether, in the vault folder dir, the heartbeat of the
// device id claims the vault.
func claims(dir, id string) error {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(device.Name(id))))
	if err != nil {
		return err
	}
	var h device.Heartbeat
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	if h.Claim.IsZero() {
		return errors.New("no claim")
	}
	return nil
}

// sectionsIn returns the run ids of the tie-off of the note rel in the
// vault folder dir.
func sectionsIn(dir, rel string) ([]string, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	secs, probs, err := tieoff.Read(r, strings.TrimSuffix(rel, ".md")+".tieoff.md")
	if err != nil {
		return nil, err
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("%s's tie-off does not parse: %v", rel, probs)
	}
	ids := make([]string, len(secs))
	for i, s := range secs {
		ids[i] = s.RunID
	}
	return ids, nil
}

// answered waits until the tie-off of rel has n sections on both devices,
// the same ones.
func answered(t *testing.T, a, b *knotdDevice, rel string, n int) {
	t.Helper()
	syncthingtest.Await(t, fmt.Sprintf("%s answered %d times on both devices", rel, n), func() error {
		sa, err := sectionsIn(a.vault, rel)
		if err != nil {
			return err
		}
		sb, err := sectionsIn(b.vault, rel)
		if err != nil {
			return err
		}
		if len(sa) != n || !slices.Equal(sa, sb) {
			return fmt.Errorf("%s has %d sections there, %d here", a.name, len(sa), len(sb))
		}
		return nil
	})
}

// noConflictCopies checks that no sync-conflict copy is in either vault.
func noConflictCopies(t *testing.T, ds ...*knotdDevice) {
	t.Helper()
	for _, d := range ds {
		cs, err := syncthingtest.ConflictCopies(d.vault)
		require.NoError(t, err)
		if len(cs) > 0 {
			t.Errorf("conflict copies on %s: %v", d.name, cs)
		}
	}
}

// TestSyncthing_OneDeviceAnswers: knotd runs on both devices; every edit,
// made on either, is answered exactly once in all, by the device that
// answers; the other says who answers; no conflict copy of any tie-off or
// knotd file appears. Then the answering device stops, the user makes the
// other take over, and it answers what was left unanswered, nothing
// twice; the first device, back, stands by.
func TestSyncthing_OneDeviceAnswers(t *testing.T) {
	syncthingtest.Binary(t)                  // or skip loudly
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // nothing of the user's, whatever the test binary inherits
	dirA, dirB := t.TempDir(), t.TempDir()
	sa, sb := syncthingtest.StartPair(t, dirA, dirB)
	a, b := newKnotdDevice(t, "A", dirA), newKnotdDevice(t, "B", dirB)

	a.start(t)
	a.claimsIn(t, dirB)
	b.start(t)
	syncthingtest.Await(t, "B to say it stands by and who answers", func() error {
		if log := b.log.String(); !strings.Contains(log, "stands by") || !strings.Contains(log, a.id(t)[:8]) {
			return errors.New("not yet")
		}
		return nil
	})

	writeFile(t, filepath.Join(dirA, "one.md"), "# One, written on A\n")
	answered(t, a, b, "one.md", 1)
	syncthingtest.Synced(t, sa, sb)
	writeFile(t, filepath.Join(dirB, "two.md"), "# Two, written on B\n")
	answered(t, a, b, "two.md", 1)
	syncthingtest.Synced(t, sa, sb)
	editFile(t, filepath.Join(dirB, "one.md"), "\nEdited on B.\n")
	answered(t, a, b, "one.md", 2)
	syncthingtest.Synced(t, sa, sb)
	editFile(t, filepath.Join(dirA, "two.md"), "\nEdited on A.\n")
	answered(t, a, b, "two.md", 2)
	syncthingtest.Synced(t, sa, sb)
	if ca, cb := a.calls(t), b.calls(t); ca != 4 || cb != 0 {
		t.Errorf("agent runs: %d on A, %d on B; want the 4 edits answered once, by A", ca, cb)
	}
	noConflictCopies(t, a, b)

	// A stops; a note is written on B meanwhile; the user makes B answer.
	a.stop(t)
	b.stop(t)
	writeFile(t, filepath.Join(dirB, "three.md"), "# Three, written on B while A is stopped\n")
	b.start(t, "--take-over")
	answered(t, a, b, "three.md", 1)
	b.claimsIn(t, dirA)
	a.start(t)
	syncthingtest.Await(t, "A, back, to stand by for B", func() error {
		if log := a.log.String(); !strings.Contains(log, "stands by") || !strings.Contains(log, b.id(t)[:8]) {
			return errors.New("not yet")
		}
		return nil
	})
	writeFile(t, filepath.Join(dirA, "four.md"), "# Four, written on A\n")
	answered(t, a, b, "four.md", 1)
	syncthingtest.Synced(t, sa, sb)
	if ca, cb := a.calls(t), b.calls(t); ca != 4 || cb != 2 {
		t.Errorf("agent runs: %d on A, %d on B; want 4 and 2", ca, cb)
	}
	for rel, n := range map[string]int{"one.md": 2, "two.md": 2, "three.md": 1, "four.md": 1} {
		answered(t, a, b, rel, n)
	}
	noConflictCopies(t, a, b)
	a.stop(t)
	b.stop(t)
}

// editFile appends text to the file at path.
func editFile(t *testing.T, path, text string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	writeFile(t, path, string(b)+text)
}

// TestSyncthing_TieOffConflictCopiesAreMerged: while the devices cannot
// reach each other, both answer (the user made the second take over,
// which the first cannot see): the same new note, written on both, is
// answered on each, and when they meet again Syncthing makes a conflict
// copy of its tie-off. The answering device merges the copy into the
// tie-off, each section once, in order, and removes it; the first device
// sees the newer claim and stands by. Nothing is lost and no copy stays.
func TestSyncthing_TieOffConflictCopiesAreMerged(t *testing.T) {
	syncthingtest.Binary(t) // or skip loudly
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dirA, dirB := t.TempDir(), t.TempDir()
	sa, sb := syncthingtest.StartPair(t, dirA, dirB)
	a, b := newKnotdDevice(t, "A", dirA), newKnotdDevice(t, "B", dirB)
	a.start(t)
	a.claimsIn(t, dirB)
	syncthingtest.Synced(t, sa, sb)

	syncthingtest.Disconnect(t, sa, sb)
	b.start(t, "--take-over")
	b.claimsIn(t, dirB)
	// The same note on both devices, byte for byte (its session already
	// set, so neither knotd writes into it): no conflict of the note.
	note := "---\nknot_session: 5f0c7e0a-1b2c-4d3e-8f4a-5b6c7d8e9f00\n---\n# Same, written on both\n"
	writeFile(t, filepath.Join(dirA, "same.md"), note)
	writeFile(t, filepath.Join(dirB, "same.md"), note)
	for _, d := range []*knotdDevice{a, b} {
		syncthingtest.Await(t, d.name+" to answer same.md", func() error {
			ids, err := sectionsIn(d.vault, "same.md")
			if err != nil || len(ids) != 1 {
				return fmt.Errorf("%d sections, %v", len(ids), err)
			}
			return nil
		})
	}
	ra, _ := sectionsIn(dirA, "same.md")
	rb, _ := sectionsIn(dirB, "same.md")

	syncthingtest.Reconnect(t, sa, sb)
	want := []string{ra[0], rb[0]}
	slices.Sort(want) // run ids are UUID v7: in time order
	syncthingtest.Await(t, "the tie-off's conflict copy to be merged and removed on both devices", func() error {
		for _, d := range []*knotdDevice{a, b} {
			cs, err := syncthingtest.ConflictCopies(d.vault)
			if err != nil {
				return err
			}
			if len(cs) > 0 {
				return fmt.Errorf("conflict copies on %s: %v", d.name, cs)
			}
			ids, err := sectionsIn(d.vault, "same.md")
			if err != nil {
				return err
			}
			if !slices.Equal(ids, want) {
				return fmt.Errorf("%s's tie-off holds runs %v; want %v", d.name, ids, want)
			}
		}
		return nil
	})
	syncthingtest.Await(t, "A to stand by for B", func() error {
		if !strings.Contains(a.log.String(), "another device answers the vault now") {
			return errors.New("not yet")
		}
		return nil
	})
	if !strings.Contains(a.log.String()+b.log.String(), "merged a sync tool's conflict copy of a tie-off") {
		t.Errorf("no knotd said it merged the copy:\nA:\n%s\nB:\n%s", a.log, b.log)
	}
	a.stop(t)
	b.stop(t)
}

// TestSyncthing_AnEditThatMeetsKnotdsSessionWriteIsKept: knotd on A, with
// an agent that keeps a conversation and write_session: true, writes a note's knot_session before
// its first run, while a newer save of the note made on B is on its way.
// Syncthing keeps the newer of the two (knotd's write) and puts B's save
// in a conflict copy, on both devices. knotd folds the copy back (B only
// added to what knotd wrote over): the note holds every line typed on
// either device and its knot_session, the copy is gone on both, and B's
// save is answered.
func TestSyncthing_AnEditThatMeetsKnotdsSessionWriteIsKept(t *testing.T) {
	syncthingtest.Binary(t) // or skip loudly
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dirA, dirB := t.TempDir(), t.TempDir()
	sa, sb := syncthingtest.StartPair(t, dirA, dirB)
	a := newKnotdDevice(t, "A", dirA)
	writeFile(t, filepath.Join(a.xdgConfig, "knotd", "config.yaml"), fmt.Sprintf(
		"write_session: true\ndefault_agent: echo\nagents:\n  echo:\n    command: [%q, \"--session={session}\"]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, a.agent))
	note := filepath.Join(dirB, "note.md")
	writeFile(t, note, "# Note\n\nfirst, on B\n")
	syncthingtest.Synced(t, sa, sb)
	// A long quiet period: B's next save reaches A, and the devices lose
	// touch, before knotd on A writes the note's session.
	a.start(t, "--debounce", "8s")
	a.claimsIn(t, dirB)
	editFile(t, note, "second, on B\n")
	syncthingtest.Synced(t, sa, sb)
	syncthingtest.Disconnect(t, sa, sb)
	editFile(t, note, "third, on B, while A writes the session\n")
	syncthingtest.Await(t, "knotd on A to write the session and answer", func() error {
		b, err := os.ReadFile(filepath.Join(dirA, "note.md"))
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "knot_session:") || a.calls(t) != 1 {
			return fmt.Errorf("%d runs, note:\n%s", a.calls(t), b)
		}
		return nil
	})
	syncthingtest.Reconnect(t, sa, sb)
	onB := &knotdDevice{name: "B", vault: dirB} // no knotd there: only its folder
	answered(t, a, onB, "note.md", 2)
	syncthingtest.Synced(t, sa, sb)
	for _, dir := range []string{dirA, dirB} {
		got, err := os.ReadFile(filepath.Join(dir, "note.md"))
		require.NoError(t, err)
		for _, line := range []string{"knot_session:", "first, on B", "second, on B", "third, on B"} {
			if !strings.Contains(string(got), line) {
				t.Errorf("the note in %s lacks %q:\n%s", dir, line, got)
			}
		}
	}
	if n := a.calls(t); n != 2 {
		t.Errorf("%d agent runs on A; want 2 (the first run, and B's save folded back)", n)
	}
	noConflictCopies(t, a, onB)
	if !strings.Contains(a.log.String(), "knotd put it back into the note") {
		t.Errorf("knotd did not say it folded the copy back:\n%s", a.log)
	}
	a.stop(t)
}

// TestSyncthing_KnotdsOwnWriteThatLostIsRemoved: the user types on B while
// knotd on A writes the note's knot_session; B's save is the newer, so
// Syncthing keeps it and puts knotd's write (the older version, with the
// key) in a conflict copy, on both devices. knotd knows what it wrote:
// the copy goes, on both, said as information, and the note runs once,
// on what was typed on B.
func TestSyncthing_KnotdsOwnWriteThatLostIsRemoved(t *testing.T) {
	syncthingtest.Binary(t) // or skip loudly
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dirA, dirB := t.TempDir(), t.TempDir()
	sa, sb := syncthingtest.StartPair(t, dirA, dirB)
	a := newKnotdDevice(t, "A", dirA)
	writeFile(t, filepath.Join(a.xdgConfig, "knotd", "config.yaml"), fmt.Sprintf(
		"write_session: true\ndefault_agent: echo\nagents:\n  echo:\n    command: [%q, \"--session={session}\"]\n    env: {%s: %s, %s: %q}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo, fakeagent.EnvState, a.agent))
	note := filepath.Join(dirB, "note.md")
	writeFile(t, note, "# Note\n\nfirst, on B\n")
	syncthingtest.Synced(t, sa, sb)
	// A long quiet period: B's save reaches A, and the devices lose
	// touch, before knotd on A writes the note's session.
	a.start(t, "--debounce", "8s")
	a.claimsIn(t, dirB)
	editFile(t, note, "\nsecond, on B, half-ty")
	syncthingtest.Synced(t, sa, sb)
	syncthingtest.Disconnect(t, sa, sb)
	syncthingtest.Await(t, "knotd on A to write the session and answer", func() error {
		b, err := os.ReadFile(filepath.Join(dirA, "note.md"))
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "knot_session:") || a.calls(t) != 1 {
			return fmt.Errorf("%d runs, note:\n%s", a.calls(t), b)
		}
		return nil
	})
	// B goes on typing (on the version it has, without the key): the
	// newer save.
	typed := "# Note\n\nfirst, on B\n\nsecond, on B, half-typed, now finished\n"
	writeFile(t, note, typed)
	sa.Scan(t) // each device knows its own version: they conflict when they meet
	sb.Scan(t)
	syncthingtest.Reconnect(t, sa, sb)
	onB := &knotdDevice{name: "B", vault: dirB} // no knotd there: only its folder
	answered(t, a, onB, "note.md", 2)
	syncthingtest.Synced(t, sa, sb)
	for _, dir := range []string{dirA, dirB} {
		got, err := os.ReadFile(filepath.Join(dir, "note.md"))
		require.NoError(t, err)
		if !strings.Contains(string(got), typed) {
			t.Errorf("the note in %s lost what was typed on B:\n%s", dir, got)
		}
	}
	if n := a.calls(t); n != 2 {
		t.Errorf("%d agent runs on A; want 2 (the first run, and B's save)", n)
	}
	noConflictCopies(t, a, onB)
	log := a.log.String()
	if !strings.Contains(log, "knotd's own write of its knot_session") {
		t.Errorf("knotd did not say it removed its own write's copy:\n%s", log)
	}
	if strings.Contains(log, "compare it with the note") {
		t.Errorf("knotd told the user to compare the copy:\n%s", log)
	}
	a.stop(t)
}

// TestSyncthing_FirstClaimsAtOnce: knotd starts on both devices at the same
// moment on a vault that nobody answers yet, so each claims it before the
// other's heartbeat arrives; notes written on each right away are answered
// exactly once in all (the device whose claim loses drops its replies and
// stands by), and one device answers from then on.
func TestSyncthing_FirstClaimsAtOnce(t *testing.T) {
	syncthingtest.Binary(t) // or skip loudly
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dirA, dirB := t.TempDir(), t.TempDir()
	sa, sb := syncthingtest.StartPair(t, dirA, dirB)
	a, b := newKnotdDevice(t, "A", dirA), newKnotdDevice(t, "B", dirB)
	a.start(t)
	b.start(t)
	a.claimsIn(t, dirA)
	b.claimsIn(t, dirB)
	writeFile(t, filepath.Join(dirA, "one.md"), "# One, written on A\n")
	writeFile(t, filepath.Join(dirB, "two.md"), "# Two, written on B\n")
	answered(t, a, b, "one.md", 1)
	answered(t, a, b, "two.md", 1)
	syncthingtest.Await(t, "one device to stand by", func() error {
		ea, eb := claims(dirA, a.id(t)), claims(dirA, b.id(t))
		if (ea == nil) == (eb == nil) {
			return fmt.Errorf("A's claim: %v, B's claim: %v", ea, eb)
		}
		return nil
	})
	syncthingtest.Synced(t, sa, sb)
	writeFile(t, filepath.Join(dirB, "three.md"), "# Three, written on B\n")
	answered(t, a, b, "three.md", 1)
	syncthingtest.Synced(t, sa, sb)
	for rel, n := range map[string]int{"one.md": 1, "two.md": 1, "three.md": 1} {
		answered(t, a, b, rel, n)
	}
	noConflictCopies(t, a, b)
	a.stop(t)
	b.stop(t)
}
