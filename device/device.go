// Package device decides which device answers a vault that is synced to
// several devices, each running knotd: exactly one answers (runs agents and
// writes tie-offs); the others stand by and say who answers (DESIGN §2,
// invariant 7).
//
// Devices see each other through the vault itself: each writes one small
// heartbeat file, .knot/devices/<device id>.json, and only its own, so a
// sync tool never has two writers for one file and never makes a conflict
// copy of it. A heartbeat says whether the device claims the vault (since
// when), when it was last written, and whether knotd runs there.
//
// There is no consensus protocol: the user's explicit choice plus
// detection is the design. The vault config names the answering device
// (runner:), or the first device to claim the vault answers until another
// takes over: when the user says so (knotd --take-over), or, if the config
// allows it (takeover_after:), when the answering device has been silent
// that long. Every device reads the same heartbeats and applies the same
// rule (the newest claim wins), so once the files have synced they agree;
// a device that sees a newer claim than its own steps down. Two devices
// that claim a vault at the same moment, before either sees the other's
// heartbeat, both answer until their heartbeats sync: the tie-off markers
// then tell each what the other answered, and the sync tool's conflict
// copies of a tie-off are merged by run id.
package device

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Heartbeat is one device's file in a vault.
type Heartbeat struct {
	// Device is the device's id (statedir.Device.ID); Name is its name.
	Device string `json:"device"`
	Name   string `json:"name"`
	// Claim is when the device began answering the vault; zero when it
	// stands by. A device keeps its claim while it is stopped: it answers
	// again when it starts, unless another device took over meanwhile.
	Claim time.Time `json:"claim,omitzero"`
	// Beat is when the device last wrote the file.
	Beat time.Time `json:"beat"`
	// Running says knotd runs on the device (false after a clean stop).
	Running bool `json:"running"`
	// PID and Version describe the knotd that wrote the file.
	PID     int    `json:"pid,omitempty"`
	Version string `json:"version,omitempty"`
}

// Label names the device for people: "laptop (3f2a9c1e)".
func (h Heartbeat) Label() string {
	id := h.Device
	if len(id) > 8 {
		id = id[:8]
	}
	if h.Name == "" {
		return id
	}
	return h.Name + " (" + id + ")"
}

// Policy is what the configuration says about answering.
type Policy struct {
	// Runner names the answering device: its name (case does not matter)
	// or its id, or at least the first 8 characters of its id. "" leaves
	// it to the claims.
	Runner string
	// TakeoverAfter lets this device take over once the answering device
	// has been silent this long; 0 only when the user says so.
	TakeoverAfter time.Duration
}

// Decision is what a device should do.
type Decision struct {
	// Answer says the device answers the vault; Claim is then the claim
	// its heartbeat must carry (kept, or new).
	Answer bool
	Claim  time.Time
	// By is the heartbeat of the device that answers when it is another
	// device (nil when this one answers, or when none is known).
	By *Heartbeat
	// Why says, for people, why the device answers or stands by, and how
	// to change that when it stands by.
	Why string
	// Warning, when set, is a problem with the configuration to tell the
	// user (a runner that names several devices).
	Warning string
}

// Decide decides what the device me (its own heartbeat as last written,
// with its claim, if any) should do, given the other devices' heartbeats,
// the policy, the time now, and whether the user asked this device to
// take over. It is pure: every device that sees the same heartbeats
// reaches the same answer about which device answers.
func Decide(me Heartbeat, others []Heartbeat, p Policy, now time.Time, takeOver bool) Decision {
	others = slices.DeleteFunc(slices.Clone(others), func(h Heartbeat) bool { return h.Device == me.Device })
	if p.Runner != "" {
		return byRunner(me, others, p.Runner, now)
	}
	cur, isMe := newestClaim(me, others)
	switch {
	case takeOver:
		why := "you asked this device to take over"
		if cur != nil && !isMe {
			why += " from " + cur.Label()
		}
		return Decision{Answer: true, Claim: after(cur, now), Why: why}
	case cur == nil:
		return Decision{Answer: true, Claim: now, Why: "no other device answers this vault"}
	case isMe:
		return Decision{Answer: true, Claim: cur.Claim, Why: "this device answers this vault since " + stamp(cur.Claim)}
	case p.TakeoverAfter > 0 && now.Sub(cur.Beat) >= p.TakeoverAfter:
		return Decision{Answer: true, Claim: after(cur, now),
			Why: fmt.Sprintf("%s has been silent since %s, longer than takeover_after (%v)", cur.Label(), stamp(cur.Beat), p.TakeoverAfter)}
	}
	c := *cur
	return Decision{By: &c, Why: standbyWhy(c, p, now)}
}

// byRunner decides when the configuration names the answering device.
func byRunner(me Heartbeat, others []Heartbeat, runner string, now time.Time) Decision {
	var matches []Heartbeat
	for _, h := range append([]Heartbeat{me}, others...) {
		if names(h, runner) {
			matches = append(matches, h)
		}
	}
	var d Decision
	if len(matches) > 1 {
		// Deterministic on every device: the lowest id among them.
		slices.SortFunc(matches, func(a, b Heartbeat) int { return strings.Compare(a.Device, b.Device) })
		labels := make([]string, len(matches))
		for i, h := range matches {
			labels[i] = h.Label()
		}
		d.Warning = fmt.Sprintf("runner: %q names %d devices (%s); %s answers. Set runner to a device id to choose.",
			runner, len(matches), strings.Join(labels, ", "), matches[0].Label())
	}
	if len(matches) > 0 && matches[0].Device == me.Device {
		d.Answer, d.Claim = true, me.Claim
		if d.Claim.IsZero() {
			d.Claim = now
		}
		d.Why = fmt.Sprintf("the vault config names this device as the answering device (runner: %s)", runner)
		return d
	}
	if len(matches) > 0 {
		by := matches[0]
		d.By = &by
	}
	d.Why = fmt.Sprintf("the vault config names %q as the answering device (runner: %s), and this device is %s; to answer from here, set runner: %s in .knot/config.yaml",
		runner, runner, me.Label(), me.Name)
	return d
}

// names reports whether runner names the device of h.
func names(h Heartbeat, runner string) bool {
	return strings.EqualFold(h.Name, runner) || h.Device == runner ||
		len(runner) >= 8 && strings.HasPrefix(h.Device, runner)
}

// newestClaim returns the heartbeat with the newest claim among me and
// others (ties: the lowest id), and whether it is me; nil when none
// claims the vault.
func newestClaim(me Heartbeat, others []Heartbeat) (*Heartbeat, bool) {
	var best *Heartbeat
	for _, h := range append([]Heartbeat{me}, others...) {
		if h.Claim.IsZero() {
			continue
		}
		if best == nil || h.Claim.After(best.Claim) || h.Claim.Equal(best.Claim) && h.Device < best.Device {
			c := h
			best = &c
		}
	}
	return best, best != nil && best.Device == me.Device
}

// after returns a claim newer than cur's, now when the clocks allow: a
// device whose clock runs behind still takes over.
func after(cur *Heartbeat, now time.Time) time.Time {
	if cur != nil && !now.After(cur.Claim) {
		return cur.Claim.Add(time.Second)
	}
	return now
}

// standbyWhy says why a device stands by for cur, and how to change that.
func standbyWhy(cur Heartbeat, p Policy, now time.Time) string {
	state := "running, last heard " + stamp(cur.Beat)
	switch {
	case !cur.Running:
		state = "stopped since " + stamp(cur.Beat)
	case now.Sub(cur.Beat) > 3*Interval:
		state = "silent since " + stamp(cur.Beat)
	}
	how := "knotd --take-over on this device, or name the answering device with runner: in .knot/config.yaml"
	if p.TakeoverAfter > 0 {
		how += fmt.Sprintf("; this device takes over on its own once %s has been silent for %v (takeover_after)", cur.Name, p.TakeoverAfter)
	} else {
		how += ", or let a device take over after a silence with takeover_after:"
	}
	return fmt.Sprintf("%s answers this vault since %s (%s); this device stands by. To answer from here: %s",
		cur.Label(), stamp(cur.Claim), state, how)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Interval is how often a running knotd writes its heartbeat, and Check
// how often it reads the others' and decides again: a takeover is seen
// within Check (and the sync tool's delay), while a heartbeat, which
// every other device downloads, is written only every Interval.
const (
	Interval = time.Minute
	Check    = 10 * time.Second
)

// MinTakeoverAfter is the shortest takeover_after: a few heartbeats, so
// that a sync delay never passes for silence.
const MinTakeoverAfter = 3 * Interval
