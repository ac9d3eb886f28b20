package vault

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/device"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/vault/internal/answer"
)

// Two devices share a vault (docs/design.md#invariants, 7). These tests run both
// on one machine, each with its own state directory (its own identity),
// on one directory: a sync tool that never lags.

// clock is a clock for both devices that runs at the speed of the real
// one from where it was set, and can be moved forward: a machine whose
// clock jumps. The daemon's timers (real ones) still fire in real time,
// and the deadlines they wait for, read from this clock, pass when it
// jumps past them.
type clock struct{ skew atomic.Int64 }

func newClock(t time.Time) *clock {
	c := &clock{}
	c.skew.Store(int64(time.Until(t)))
	return c
}

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.skew.Load())).UTC() }
func (c *clock) advance(d time.Duration) { c.skew.Add(int64(d)) }

// otherDevice returns an env on the same vault with a state directory of
// its own: another device.
func (e *env) otherDevice() *env {
	o := *e
	o.home = e.t.TempDir()
	return &o
}

// deviceID returns the device identity of e's state directory.
func (e *env) deviceID() statedir.Device {
	e.t.Helper()
	d, err := statedir.LoadDevice(e.home)
	mustDo(e.t, err)
	return d
}

// at returns e's options with a clock.
func (e *env) at(c *clock) Options {
	o := e.options()
	o.Now = c.now
	return o
}

// TestOnce_OneDeviceAnswers: the first device to answer keeps answering;
// a second device stands by, runs nothing, and says who answers, until
// the user makes it take over; then the first stands by. Each change is
// answered once in all.
func TestOnce_OneDeviceAnswers(t *testing.T) {
	a := newEnv(t)
	b := a.otherDevice()
	a.onceFresh()
	b.onceFresh() // first contact: adopts, stands by
	a.write("n.md", "# One\n")

	sum := b.onceWith(b.options(), OnceOptions{})
	if sum.Ran != 0 || !strings.Contains(sum.Standby, a.deviceID().ID[:8]) {
		t.Fatalf("device B's pass = %+v; want it to stand by for device A", sum)
	}
	if got := ran(a.onceFresh()); !slices.Equal(got, []string{"Created n.md"}) {
		t.Fatalf("device A ran %v", got)
	}

	a.write("n.md", "# Two\n")
	if got := ran(b.onceWith(b.options(), OnceOptions{TakeOver: true})); !slices.Equal(got, []string{"Modified n.md"}) {
		t.Fatalf("device B taking over ran %v", got)
	}
	a.write("n.md", "# Three\n")
	if sum := a.onceFresh(); sum.Ran != 0 || sum.Standby == "" {
		t.Errorf("device A after the takeover = %+v; want it to stand by", sum)
	}
	if got := ran(b.onceFresh()); !slices.Equal(got, []string{"Modified n.md"}) {
		t.Errorf("device B ran %v", got)
	}
	if evs := a.events("n.md"); !slices.Equal(evs, []string{"Created", "Modified", "Modified"}) {
		t.Errorf("tie-off = %v; want each change answered once", evs)
	}
}

// TestOnce_TakeoverAfterSilence: with takeover_after, a standby device
// takes over once the answering device has been silent that long, and
// answers what was left unanswered; the old device then stands by.
func TestOnce_TakeoverAfterSilence(t *testing.T) {
	a := newEnv(t)
	a.write(".knot/config.yaml", "takeover_after: 10m\n")
	b := a.otherDevice()
	c := newClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	a.onceWith(a.at(c), OnceOptions{})
	b.onceWith(b.at(c), OnceOptions{})
	a.write("n.md", "# One\n")
	c.advance(5 * time.Minute)
	if sum := b.onceWith(b.at(c), OnceOptions{}); sum.Ran != 0 || sum.Standby == "" {
		t.Fatalf("device B after 5 minutes of silence = %+v; want it to stand by", sum)
	}
	c.advance(6 * time.Minute)
	if got := ran(b.onceWith(b.at(c), OnceOptions{})); !slices.Equal(got, []string{"Created n.md"}) {
		t.Fatalf("device B after 11 minutes of silence ran %v; want the unanswered note", got)
	}
	c.advance(time.Minute)
	a.write("n.md", "# Two\n")
	if sum := a.onceWith(a.at(c), OnceOptions{}); sum.Ran != 0 || sum.Standby == "" {
		t.Errorf("device A after the takeover = %+v; want it to stand by", sum)
	}
}

// TestOnce_RunnerNamesTheDevice: runner: in the vault config chooses the
// answering device, whoever claimed the vault before.
func TestOnce_RunnerNamesTheDevice(t *testing.T) {
	a := newEnv(t)
	b := a.otherDevice()
	a.onceFresh()
	b.onceFresh()
	a.write(".knot/config.yaml", "runner: "+b.deviceID().ID+"\n")
	a.write("n.md", "# One\n")
	if sum := a.onceFresh(); sum.Ran != 0 || !strings.Contains(sum.Standby, b.deviceID().ID[:8]) {
		t.Errorf("device A = %+v; want it to stand by for B, which the config names", sum)
	}
	if got := ran(b.onceFresh()); !slices.Equal(got, []string{"Created n.md"}) {
		t.Errorf("device B ran %v", got)
	}
	if sum := a.onceWith(a.options(), OnceOptions{TakeOver: true}); sum.Ran != 0 {
		t.Errorf("--take-over on a device the config does not name ran %v", ran(sum))
	}
}

// TestWatch_HandOver runs both devices' daemons: A answers, B stands by;
// A stops; after takeover_after (a fake clock) B takes over and answers
// what A left unanswered; A starts again and stands by. Every change is
// answered exactly once in all.
func TestWatch_HandOver(t *testing.T) {
	a := newEnv(t)
	a.write(".knot/config.yaml", "takeover_after: 5m\n")
	b := a.otherDevice()
	c := newClock(time.Now())
	beat := 20 * time.Millisecond
	start := func(e *env) *watching {
		o := e.at(c)
		o.Heartbeat = beat
		v, err := Open(e.root, o)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = v.Close() })
		return e.watch(v, WatchOptions{})
	}
	wa := start(a)
	testutil.WaitFor(t, waitTimeout, "device A's claim", func() bool { return claimOf(t, a, a) })
	sb := startStandby(t, b, c, beat)
	a.write("one.md", "# One\n")
	wa.settle()
	mustDo(t, wa.stop())
	a.write("two.md", "# Two, written while A is stopped\n")
	c.advance(6 * time.Minute)
	testutil.WaitFor(t, waitTimeout, "device B to take over", func() bool { return claimOf(t, b, b) })
	testutil.WaitFor(t, waitTimeout, "device B to answer two.md", func() bool { return len(a.sections("two.md")) == 1 })
	mustDo(t, sb.stop())
	if evs := a.events("one.md"); !slices.Equal(evs, []string{"Created"}) {
		t.Errorf("one.md's tie-off = %v", evs)
	}
	if evs := a.events("two.md"); !slices.Equal(evs, []string{"Created"}) {
		t.Errorf("two.md's tie-off = %v", evs)
	}
}

// claimOf reports whether the heartbeat of who's device in e's vault
// claims the vault.
func claimOf(t *testing.T, e, who *env) bool {
	hs, err := device.Read(e.vaultRoot())
	mustDo(t, err)
	id := who.deviceID().ID
	for _, h := range hs {
		if h.Device == id {
			return !h.Claim.IsZero()
		}
	}
	return false
}

// startStandby starts device e's daemon, which stands by: no watcher
// runs, so the harness's watch (which waits for the watcher's first
// rescan) cannot be used until it answers.
func startStandby(t *testing.T, e *env, c *clock, beat time.Duration) *standby {
	o := e.at(c)
	o.Heartbeat = beat
	v, err := Open(e.root, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &standby{cancel: cancel, v: v}
	s.wg.Go(func() { s.err = v.Watch(ctx, WatchOptions{}) })
	t.Cleanup(func() { _ = s.stop(); _ = v.Close() })
	return s
}

type standby struct {
	cancel context.CancelFunc
	v      *Vault
	wg     sync.WaitGroup
	err    error
	once   sync.Once
}

func (s *standby) stop() error {
	s.once.Do(func() { s.cancel(); s.wg.Wait() })
	return s.err
}

// TestOnce_ManyDeviceFiles: the folder of heartbeats holds more than a
// thousand files, newer than the answering device's (devices that came
// and went: a heartbeat is never removed). The answering device keeps its
// claim, the other keeps standing by for it, each change is answered
// once.
func TestOnce_ManyDeviceFiles(t *testing.T) {
	a := newEnv(t)
	b := a.otherDevice()
	a.onceFresh()
	b.onceFresh()
	claimOfA := func() time.Time {
		var h device.Heartbeat
		b, err := os.ReadFile(filepath.Join(a.root, filepath.FromSlash(device.Name(a.deviceID().ID))))
		if err == nil {
			err = json.Unmarshal(b, &h)
		}
		if err != nil || h.Claim.IsZero() {
			t.Fatalf("device A's heartbeat = %+v, %v; want its claim", h, err)
		}
		return h.Claim
	}
	claimed := claimOfA()
	dir := filepath.Join(a.root, filepath.FromSlash(device.Dir))
	old := time.Now().Add(-24 * time.Hour)
	for _, id := range []string{a.deviceID().ID, b.deviceID().ID} {
		mustDo(t, os.Chtimes(filepath.Join(dir, id+".json"), old, old))
	}
	for i := range 1100 {
		h := device.Heartbeat{Device: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Name: fmt.Sprint("gone", i), Beat: old}
		mustDo(t, device.Write(a.vaultRoot(), h, false))
	}

	a.write("n.md", "# One\n")
	sum := a.onceFresh()
	if got := ran(sum); !slices.Equal(got, []string{"Created n.md"}) || sum.Standby != "" {
		t.Fatalf("device A ran %v (%+v); want n.md", got, sum)
	}
	if got := claimOfA(); !got.Equal(claimed) {
		t.Errorf("device A's claim is from %v now; want it kept from %v", got, claimed)
	}
	a.write("n.md", "# Two\n")
	if sum := b.onceFresh(); sum.Ran != 0 || !strings.Contains(sum.Standby, a.deviceID().ID[:8]) {
		t.Errorf("device B = %+v; want it to stand by for A", sum)
	}
	if evs := a.events("n.md"); !slices.Equal(evs, []string{"Created"}) {
		t.Errorf("tie-off = %v; want the one change answered once", evs)
	}
}

// TestOnce_FirstClaimsAtOnce: two devices claim a synced vault at the same
// moment, each before the other's heartbeat reached it (A's is held back
// here, as a sync tool's delay would). B answers a change; while its agent
// runs, A's heartbeat arrives with the older claim, which wins: B drops
// its run's reply, appends nothing and stands by, and A answers the change.
// Each change is answered once.
func TestOnce_FirstClaimsAtOnce(t *testing.T) {
	a := newEnv(t)
	mustDo(t, os.Mkdir(a.abs(".stfolder"), 0o755)) // a Syncthing folder
	b := a.otherDevice()
	c := newClock(time.Now())
	a.onceWith(a.at(c), OnceOptions{})
	beatA := filepath.Join(a.root, filepath.FromSlash(device.Name(a.deviceID().ID)))
	held := filepath.Join(t.TempDir(), "held.json")
	mustDo(t, os.Rename(beatA, held)) // A's heartbeat is on its way
	b.onceWith(b.at(c), OnceOptions{})
	if !claimOf(t, b, b) {
		t.Fatal("device B, seeing no claim, did not claim the vault")
	}

	b.useAgent("", gateBehaviour) // one user config for both devices here
	b.write("n.md", "# One\n")
	v, err := Open(b.root, b.at(c))
	mustDo(t, err)
	t.Cleanup(func() { _ = v.Close() })
	type result struct {
		sum Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := v.Once(context.Background(), OnceOptions{})
		done <- result{sum, err}
	}()
	b.waitCalls(1)
	mustDo(t, os.Rename(held, beatA)) // A's heartbeat arrives
	b.release(1)
	res := <-done
	mustDo(t, res.err)
	if res.sum.Ran != 0 || len(b.sections("n.md")) != 0 {
		t.Fatalf("device B's pass = %+v, tie-off %v; want its run's reply dropped, as A's older claim wins", res.sum, b.events("n.md"))
	}
	if claimOf(t, b, b) {
		t.Error("device B still claims the vault; want it to stand by for A")
	}

	c.advance(time.Minute)
	a.release(2)
	if got := ran(a.onceWith(a.at(c), OnceOptions{})); !slices.Equal(got, []string{"Created n.md"}) {
		t.Errorf("device A ran %v; want the change B left to it", got)
	}
	if evs := a.events("n.md"); !slices.Equal(evs, []string{"Created"}) {
		t.Errorf("tie-off = %v; want the change answered once", evs)
	}
}

// TestOnce_FirstClaimAlone: a device alone with a vault appends its first
// claim's answers at once; in a synced folder it appends them once no
// other device's earlier claim arrived within answer.SettleFor of its claim.
func TestOnce_FirstClaimAlone(t *testing.T) {
	for _, synced := range []bool{false, true} {
		t.Run(fmt.Sprint("synced=", synced), func(t *testing.T) {
			e := newEnv(t)
			if synced {
				mustDo(t, os.Mkdir(e.abs(".stfolder"), 0o755))
			}
			c := newClock(time.Now())
			e.write("n.md", "# One\n")
			var log testutil.Buffer
			o := e.at(c)
			o.Logger = slog.New(slog.NewTextHandler(&log, nil))
			v, err := Open(e.root, o)
			mustDo(t, err)
			t.Cleanup(func() { _ = v.Close() })
			done := make(chan Summary, 1)
			go func() {
				sum, _ := v.Once(context.Background(), OnceOptions{All: true})
				done <- sum
			}()
			if synced {
				testutil.WaitFor(t, waitTimeout, "the run's answer to wait", func() bool { return strings.Contains(log.String(), "the answers wait") })
				if n := len(e.sections("n.md")); n != 0 {
					t.Fatalf("the answer was appended before the claim settled (%d sections)", n)
				}
				c.advance(answer.SettleFor)
			}
			sum := <-done
			if got := ran(sum); !slices.Equal(got, []string{"Created n.md"}) {
				t.Errorf("the pass ran %v", got)
			}
			if evs := e.events("n.md"); !slices.Equal(evs, []string{"Created"}) {
				t.Errorf("tie-off = %v", evs)
			}
			if waited := strings.Contains(log.String(), "the answers wait"); waited != synced {
				t.Errorf("the answer waited: %v; want %v\n%s", waited, synced, log.String())
			}
		})
	}
}
