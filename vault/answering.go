package vault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/knotd/knotd/device"
)

// One device answers a vault (DESIGN §2, invariant 7; see package device):
// before it runs anything, a pass decides whether this device answers, and
// the daemon decides again at every heartbeat. A device that does not
// answer stands by: it runs nothing, writes nothing but its own heartbeat
// (and its own state, on first contact), and says which device answers and
// how to change that.

// heartbeat returns how often this device decides again whether it
// answers (it reads the other devices' heartbeats each time, and writes
// its own when its claim changes or device.Interval has passed).
func (v *Vault) heartbeat() time.Duration {
	if v.beat > 0 {
		return v.beat
	}
	return device.Check
}

// decide reads the devices' heartbeats, decides whether this device
// answers the vault, and writes this device's heartbeat when its claim
// changes (kept, made, or dropped) or its last one is device.Interval old.
// takeOver says the user asked this device to answer. A heartbeat that
// cannot be read or written is said once and does not stop the pass:
// alone with a vault, a device still answers it.
func (v *Vault) decide(takeOver bool) device.Decision {
	others, err := device.Read(v.fs)
	if err != nil {
		v.warnOnce(device.Dir, "cannot read the other devices' heartbeats; this device decides as if it were alone", "err", err)
	}
	me := v.me()
	now := v.now().UTC()
	d := device.Decide(me, others, device.Policy{Runner: v.cfg.Runner, TakeoverAfter: v.cfg.TakeoverAfter}, now, takeOver)
	if d.Warning != "" {
		v.warnOnce(device.Dir, d.Warning)
	}
	claim := time.Time{}
	if d.Answer {
		claim = d.Claim
	}
	if !claim.Equal(me.Claim) || !me.Running || now.Sub(me.Beat) >= device.Interval || now.Before(me.Beat) {
		me.Claim, me.Beat, me.Running = claim, now, true
		v.writeBeat(me)
	}
	return d
}

// me returns this device's heartbeat as it last wrote it (read from the
// vault on first use, so that a restart keeps the device's claim).
func (v *Vault) me() device.Heartbeat {
	v.beatMu.Lock()
	defer v.beatMu.Unlock()
	if v.mine == nil {
		h := device.Heartbeat{Device: v.device.ID, Name: v.device.Name}
		if hs, err := device.Read(v.fs); err == nil {
			for _, o := range hs {
				if o.Device == v.device.ID {
					h.Claim = o.Claim
				}
			}
		}
		v.mine = &h
	}
	h := *v.mine
	h.Name, h.PID, h.Version = v.device.Name, os.Getpid(), Version
	return h
}

// writeBeat writes this device's heartbeat h into the vault.
func (v *Vault) writeBeat(h device.Heartbeat) {
	v.beatMu.Lock()
	v.mine = &h
	v.beatMu.Unlock()
	if v.dry {
		return
	}
	if err := device.Write(v.fs, h, v.inGit()); err != nil {
		v.warnOnce(device.Dir, "cannot write this device's heartbeat into the vault; other devices cannot see that it answers", "err", err)
	}
}

// stopBeat writes this device's last heartbeat as knotd stops: its claim
// stays (it answers again when it starts, unless another device took over
// meanwhile), but other devices see it stopped.
func (v *Vault) stopBeat() {
	h := v.me()
	h.Beat, h.Running = v.now().UTC(), false
	v.writeBeat(h)
}

// inGit reports whether the vault is inside a git work tree (a .git at
// its root or above): heartbeats are then kept out of git.
func (v *Vault) inGit() bool {
	for dir := v.root; ; {
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

// ErrStandby is wrapped by errors about work a standby device refuses.
var ErrStandby = errors.New("another device answers this vault")

// Watch watches the vault until ctx ends, answering it while this device
// is the answering device and standing by otherwise: it decides at the
// start and at every heartbeat. A device that another device takes over
// from stops taking changes, lets its running agents finish (as on a stop)
// and stands by; a standby device that becomes the answering device
// catches up on every change the answering device left unanswered (the
// tie-off markers say what it answered) and answers from then on. See
// answerWatch for the rest. It returns nil when ctx ends.
func (v *Vault) Watch(ctx context.Context, opts WatchOptions) error {
	defer v.stopBeat()
	takeOver := opts.TakeOver
	var said string
	for {
		d := v.decide(takeOver)
		takeOver = false
		if d.Why != said {
			if d.Answer {
				v.log.Info("this device answers the vault", "device", v.device.Name, "why", d.Why)
			} else {
				v.log.Warn("this device stands by: "+d.Why, "device", v.device.Name)
			}
			said = d.Why
		}
		if !d.Answer {
			if err := v.standBy(ctx); err != nil || ctx.Err() != nil {
				return err
			}
			continue
		}
		answerCtx, stepDown := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { v.keepAnswering(answerCtx, stepDown, &said) })
		err := v.answerWatch(answerCtx, opts)
		stepDown()
		wg.Wait()
		if err != nil || ctx.Err() != nil {
			return err
		}
		opts.All = false // --all ran once, when this device first answered
	}
}

// standBy waits one heartbeat, keeping this device's state current on
// first contact (so that a takeover knows which notes changed since), or
// returns when ctx ends.
func (v *Vault) standBy(ctx context.Context) error {
	if _, seen, err := v.store.Adopted(); err != nil {
		return err
	} else if !seen {
		if _, err := v.firstContact(); err != nil {
			return err
		}
	}
	t := time.NewTimer(v.heartbeat())
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-v.store.Damaged():
		return v.stateDamaged()
	}
	return nil
}

// keepAnswering writes this device's heartbeat at every interval while
// ctx lasts, and calls stepDown when another device took over.
func (v *Vault) keepAnswering(ctx context.Context, stepDown context.CancelFunc, said *string) {
	t := time.NewTicker(v.heartbeat())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d := v.decide(false)
		if !d.Answer {
			v.log.Warn("another device answers the vault now: this device stops answering and stands by; "+d.Why, "device", v.device.Name)
			*said = d.Why
			stepDown()
			return
		}
	}
}

// standbySummary is the error-free outcome of a --once pass on a device
// that does not answer: it says which device does.
func standbyReason(d device.Decision) string {
	if d.By != nil {
		return fmt.Sprintf("%s answers this vault", d.By.Label())
	}
	return d.Why
}
