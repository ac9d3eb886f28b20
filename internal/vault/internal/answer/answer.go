// Package answer is the answering device of a vault: whether this device
// answers it, decided from the devices' heartbeats in the vault (package
// device), at first and at every heartbeat; this device's own heartbeat;
// the wait for a device it takes over from, and for a first claim in a
// synced folder to settle. It reads and writes the vault's folder of
// heartbeats and nothing else; what it needs of the vault is Host.
package answer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knotd/knotd/internal/device"
)

// Host is what the answering device asks of the vault it answers, each
// time it needs it (a test may change the vault's clock or logger after
// the device is made; a reload changes the policy).
type Host interface {
	Now() time.Time                         // the clock of heartbeats
	Log() *slog.Logger                      // where the device says what it does
	WarnOnce(path, msg string, args ...any) // a warning said once per path and message
	Policy() device.Policy                  // the configuration's runner and takeover delay
}

// Options are what the answering device knows of the vault and this
// device when it is made.
type Options struct {
	FS      *os.Root      // the vault
	Root    string        // the vault's absolute path
	Dry     bool          // --dry-run: no heartbeat is written, no wait
	ID      string        // this device's id
	Name    string        // this device's name
	Version string        // knotd's version, in the heartbeat
	Beat    time.Duration // heartbeat interval (0: device.Check)
}

// New returns the answering device of the vault host, with options o.
func New(host Host, o Options) *Device {
	return &Device{host: host, fs: o.FS, root: o.Root, dry: o.Dry, id: o.ID, name: o.Name, version: o.Version,
		beat: o.Beat, recheck: make(chan struct{}, 1)}
}

// One device answers a vault (docs/design.md#invariants, 7; see package device):
// before it runs anything, a pass decides whether this device answers, and
// the daemon decides again at every heartbeat. A device that does not
// answer stands by: it runs nothing, writes nothing but its own heartbeat
// (and its own state, on first contact), and says which device answers and
// how to change that.

// Device is the answering device: this device's heartbeat and its
// decisions about answering the vault. Its methods are safe for
// concurrent use.
type Device struct {
	host    Host
	fs      *os.Root
	root    string
	dry     bool
	id      string
	name    string
	version string
	beat    time.Duration     // heartbeat interval (0: device.Check)
	mu      sync.Mutex        // guards mine and decided
	mine    *device.Heartbeat // this device's heartbeat as last written
	decided *device.Decision  // the last decision about answering
	// SteppingDown is set while a device that another took over from
	// stops: its runs get no grace period.
	SteppingDown atomic.Bool
	// settleMu serialises the runs that wait for a first claim to settle
	// (see AnswersHold); recheck, when it holds a value, makes
	// KeepAnswering decide again at once (a run found another claim).
	settleMu sync.Mutex
	recheck  chan struct{}
}

// Heartbeat returns how often this device decides again whether it
// answers (it reads the other devices' heartbeats each time, and writes
// its own when its claim changes or device.Interval has passed).
func (a *Device) Heartbeat() time.Duration {
	if a.beat > 0 {
		return a.beat
	}
	return device.Check
}

// Decide reads the devices' heartbeats, decides whether this device
// answers the vault, and writes this device's heartbeat when its claim
// changes (kept, made, or dropped) or its last one is device.Interval old.
// takeOver says the user asked this device to answer.
//
// A device that shares the vault with others answers only on a claim it
// wrote: if its heartbeat cannot be written, the others cannot see that it
// answers, and it stands by, saying why (alone with the vault, it answers
// all the same, and says that the heartbeat could not be written). If the others' heartbeats cannot be read, the device keeps
// its last decision (at first it decides on what it could read: a claim
// it makes then never takes the vault from a device that claimed it
// before, see package device).
//
// The error is set when the device stands by because its heartbeat could
// not be written (a pass reports it as a failure).
func (a *Device) Decide(takeOver bool) (device.Decision, error) {
	me := a.me()
	// This device's heartbeat, and the answering device's as last seen,
	// are read whatever else the folder holds; at first, when this device
	// does not know yet which device answers, every heartbeat is.
	read := device.ReadAll
	always := []string{me.Device}
	if last := a.LastDecision(); last != nil {
		read = device.Read
		if last.By != nil {
			always = append(always, last.By.Device)
		}
	}
	others, rerr := read(a.fs, always...)
	switch {
	case errors.Is(rerr, device.ErrTooMany):
		a.host.WarnOnce(device.Dir+" too many", "the folder of the devices' heartbeats holds too many files; this device's own heartbeat, and the answering device's, are read all the same", "err", rerr)
	case rerr != nil:
		a.host.WarnOnce(device.Dir, "cannot read the other devices' heartbeats", "err", rerr)
		if last := a.LastDecision(); last != nil && !takeOver {
			return *last, nil
		}
	}
	now := a.host.Now().UTC()
	d := device.Decide(me, others, a.host.Policy(), now, takeOver)
	if d.Warning != "" {
		a.host.WarnOnce(device.Dir, d.Warning)
	}
	var standErr error
	claim, gen, over := time.Time{}, 0, ""
	if d.Answer {
		claim, gen, over = d.Claim, d.Gen, d.Over
	}
	if !claim.Equal(me.Claim) || gen != me.Gen || over != me.Over || !me.Running || now.Sub(me.Beat) >= device.Interval || now.Before(me.Beat) {
		me.Claim, me.Gen, me.Over, me.Beat, me.Running = claim, gen, over, now, true
		if err := a.writeBeat(me); err != nil && d.Answer && !a.dry && (len(others) > 0 || d.From != nil) {
			// Other devices share the vault and could not see this one's
			// claim: answering would make two answering devices.
			d = device.Decision{Why: fmt.Sprintf("this device cannot write its heartbeat into the vault (%v), so the other devices could not see that it answers; it stands by until it can", err)}
			standErr = fmt.Errorf("vault: %s", d.Why)
		}
	}
	a.mu.Lock()
	a.decided = &d
	a.mu.Unlock()
	return d, standErr
}

// LastDecision returns the last decision Decide made, or nil.
func (a *Device) LastDecision() *device.Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.decided
}

// me returns this device's heartbeat as it last wrote it (read from the
// vault on first use, so that a restart keeps the device's claim).
func (a *Device) me() device.Heartbeat {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mine == nil {
		h := device.Heartbeat{Device: a.id, Name: a.name}
		if o, ok := device.ReadOne(a.fs, a.id); ok { // by name: whatever else the folder holds
			h.Claim, h.Gen, h.Over = o.Claim, o.Gen, o.Over
		}
		a.mine = &h
	}
	h := *a.mine
	h.Name, h.PID, h.Version = a.name, os.Getpid(), a.version
	return h
}

// writeBeat writes this device's heartbeat h into the vault; an error is
// said once, and returned.
func (a *Device) writeBeat(h device.Heartbeat) error {
	a.mu.Lock()
	a.mine = &h
	a.mu.Unlock()
	if a.dry {
		return nil
	}
	err := device.Write(a.fs, h, a.inGit())
	if err != nil {
		a.host.WarnOnce(device.Dir, "cannot write this device's heartbeat into the vault; other devices cannot see whether it answers", "err", err)
	}
	return err
}

// handoverWait bounds how long a device that takes a vault over waits for
// the device it takes over from to stand by (its heartbeat shows it): two
// checks of that device and a sync tool's delay.
const handoverWait = 2*device.Check + 10*time.Second

// WaitHandover waits, before this device answers, until the device it
// took the vault over from, which was still running, stood by (it then
// stopped its runs in progress without appending them, so that a change
// is not answered by both), at most handoverWait (a device it cannot hear
// from is not waited for longer). It returns early when ctx ends.
func (a *Device) WaitHandover(ctx context.Context, from *device.Heartbeat) {
	if from == nil || a.dry {
		return
	}
	a.host.Log().Info("waiting for the device this one takes over from to stand by", "from", from.Label(), "at_most", handoverWait)
	deadline := time.NewTimer(handoverWait)
	defer deadline.Stop()
	tick := time.NewTicker(min(a.Heartbeat(), time.Second))
	defer tick.Stop()
	for {
		if h, ok := device.ReadOne(a.fs, from.Device); ok && device.Stepped(h) {
			a.host.Log().Info("the device this one takes over from stands by", "from", from.Label())
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			a.host.Log().Warn("the device this one takes over from did not say it stands by in time; answering all the same (a change it was answering meanwhile may get an answer from each)", "from", from.Label())
			return
		case <-tick.C:
		}
	}
}

// SettleFor is how long the answers of a first claim made in a synced
// folder wait before they are appended (see AnswersHold): the time the
// heartbeat of a device that claimed the vault at the same moment takes to
// arrive, as for a handover.
const SettleFor = handoverWait

// AnswersHold reports whether the reply of a run may be appended: this
// device still answers the vault. Two devices started at the same moment
// on a synced vault both find no claim and both claim it; once their
// heartbeats sync, the older claim wins (see package device). So, in a
// folder a sync tool shares (syncedFolder), the answers of a first claim
// wait until it is SettleFor old, reading the heartbeats meanwhile: the
// device whose claim loses drops its runs' replies (their changes are
// left to the device that answers, as at a handover) and stands by, and
// only one device appends. The runs themselves start at once, and a
// claim that is older, a takeover's, or made in a folder no sync tool
// shares never waits. ctx ending (knotd stops) ends the wait: the reply
// is kept if this device still answers then.
func (a *Device) AnswersHold(ctx context.Context) bool {
	if a.dry || a.LastDecision() == nil {
		return true // a run outside a decision (none yet): as before
	}
	a.settleMu.Lock()
	defer a.settleMu.Unlock()
	var tick *time.Ticker
	for {
		d := *a.LastDecision()
		if a.settling(d) {
			d, _ = a.Decide(false)
		}
		if !d.Answer || !a.settling(d) {
			if !d.Answer {
				select { // KeepAnswering stands by now, not at its next beat
				case a.recheck <- struct{}{}:
				default:
				}
			}
			return d.Answer
		}
		if tick == nil {
			a.host.Log().Info("this device's claim of the vault is new, and the folder is synced: the answers wait until no other device's earlier claim arrives", "claim", d.Claim, "until", d.Claim.Add(SettleFor))
			tick = time.NewTicker(min(a.Heartbeat(), time.Second))
			defer tick.Stop()
		}
		select {
		case <-ctx.Done():
			return !a.SteppingDown.Load()
		case <-tick.C:
		}
	}
}

// settling reports whether d is a first claim younger than SettleFor in a
// synced folder, whose answers wait (see AnswersHold).
func (a *Device) settling(d device.Decision) bool {
	return d.Answer && d.Gen == 1 && d.From == nil && d.Over == "" &&
		a.host.Now().Sub(d.Claim) < SettleFor && syncedFolder(a.root)
}

// syncedFolder reports whether the vault at root is in a folder that a
// sync tool knotd recognises shares with other devices: Syncthing's
// .stfolder, Dropbox's .dropbox, Nextcloud's or ownCloud's sync log, at
// the vault's root or above, or iCloud Drive.
func syncedFolder(root string) bool {
	if strings.Contains(root, string(filepath.Separator)+"Mobile Documents"+string(filepath.Separator)) || strings.Contains(root, "com~apple~CloudDocs") {
		return true
	}
	for dir := root; ; {
		for _, marker := range []string{".stfolder", ".dropbox", ".nextcloudsync.log", ".owncloudsync.log"} {
			if _, err := os.Lstat(filepath.Join(dir, marker)); err == nil {
				return true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// StopBeat writes this device's last heartbeat as knotd stops: its claim
// stays (it answers again when it starts, unless another device took over
// meanwhile), but other devices see it stopped.
func (a *Device) StopBeat() {
	h := a.me()
	h.Beat, h.Running = a.host.Now().UTC(), false
	_ = a.writeBeat(h) // said once by writeBeat; knotd is stopping all the same
}

// inGit reports whether the vault is inside a git work tree (a .git at
// its root or above): heartbeats are then kept out of git.
func (a *Device) inGit() bool {
	for dir := a.root; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// KeepAnswering writes this device's heartbeat at every interval while
// ctx lasts, and calls stepDown when another device took over.
func (a *Device) KeepAnswering(ctx context.Context, stepDown context.CancelFunc, said *string) {
	t := time.NewTicker(a.Heartbeat())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.recheck:
		}
		d, _ := a.Decide(false)
		if !d.Answer {
			a.host.Log().Warn("another device answers the vault now: this device stops answering (its runs in progress are stopped, their changes left to that device) and stands by; "+d.Why, "device", a.name)
			*said = d.Why
			a.SteppingDown.Store(true) // no grace period: the other device answers what these runs were answering
			stepDown()
			return
		}
	}
}

// Serve is the daemon's answering, until ctx ends: it decides whether
// this device answers, at the start (taking the vault over if takeOver)
// and at every heartbeat, and says each new decision. While this device
// stands by it calls standBy, which waits a heartbeat; once it answers it
// waits for the device it takes over from (WaitHandover) and calls answer
// with a context that ends with ctx, or when another device takes over
// (KeepAnswering): answer then lets its runs finish as on a stop (with no
// grace period: see SteppingDown) and returns, and the device stands by.
// Serve returns standBy's or answer's error, or nil when ctx ends.
func (a *Device) Serve(ctx context.Context, takeOver bool, standBy, answer func(context.Context) error) error {
	var said string
	for {
		d, _ := a.Decide(takeOver) // a heartbeat that cannot be written is said, and tried again
		takeOver = false
		if d.Why != said {
			if d.Answer {
				a.host.Log().Info("this device answers the vault", "device", a.name, "why", d.Why)
			} else {
				a.host.Log().Warn("this device stands by: "+d.Why, "device", a.name)
				if d.Unanswered != "" {
					a.host.Log().Error("nobody may answer this vault: "+d.Unanswered, "device", a.name)
				}
			}
			said = d.Why
		}
		if !d.Answer {
			if err := standBy(ctx); err != nil || ctx.Err() != nil {
				return err
			}
			continue
		}
		a.WaitHandover(ctx, d.From)
		if ctx.Err() != nil {
			return nil
		}
		answerCtx, stepDown := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { a.KeepAnswering(answerCtx, stepDown, &said) })
		err := answer(answerCtx)
		stepDown()
		wg.Wait()
		a.SteppingDown.Store(false)
		if err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// StandbyReason is the error-free outcome of a --once pass on a device
// that does not answer: it says which device does.
func StandbyReason(d device.Decision) string {
	if d.By != nil {
		return fmt.Sprintf("%s answers this vault", d.By.Label())
	}
	return d.Why
}
