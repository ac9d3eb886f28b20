// Package device decides which device answers a vault that is synced to
// several devices, each running knotd: exactly one answers (runs agents and
// writes tie-offs); the others stand by and say who answers (docs/design.md#invariants,
// 7).
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
// that long. A claim has a generation: the first claim of a vault is
// generation 1, and a takeover claims the generation after the one it
// takes over. Every device reads the same heartbeats and applies the same
// rule: the highest generation wins, and of equal ones the oldest claim
// (first come, first served), then the lowest id. A generation is a
// peer's input: one beyond maxGen, or below 0, claims nothing, and a
// takeover of a claim at maxGen itself (no knotd counts that far) stays
// at maxGen and wins by naming the claim it took over (Over). So once the
// files have synced the devices agree, a device that did not yet see the
// answering device's heartbeat (a new device, a sync delay) never takes
// the vault from it by claiming it too, and only a takeover does. Two
// devices that claim a vault at the same moment learn which claim wins
// once their heartbeats sync; package vault holds a first claim's answers
// back that long in a synced folder, so that the loser appends nothing.
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
	// Gen is the claim's generation: 1 for a first claim, one more than
	// the claim it took over from for a takeover (at most maxGen).
	Gen int `json:"gen,omitempty"`
	// Over is, for a takeover, the id of the device whose claim it took
	// over: at maxGen, where generations no longer count, a claim beats
	// the one it names.
	Over string `json:"over,omitempty"`
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
	// Answer says the device answers the vault; Claim and Gen are then
	// the claim its heartbeat must carry (kept, or new).
	Answer bool
	Claim  time.Time
	Gen    int
	Over   string
	// From, when set, is the device this one takes over from, which was
	// still running at its last heartbeat: before it answers, this device
	// should wait until that device's heartbeat shows it stood by (see
	// Stepped), so that a change is not answered by both.
	From *Heartbeat
	// By is the heartbeat of the device that answers when it is another
	// device (nil when this one answers, or when none is known).
	By *Heartbeat
	// Why says, for people, why the device answers or stands by, and how
	// to change that when it stands by.
	Why string
	// How, when the device stands by, says what makes it answer (for
	// people: --take-over, or runner: when the config names a device).
	How string
	// Unanswered, when set, says that the device this one stands by for
	// may be gone, so that nobody answers the vault: it has this
	// machine's name and is stopped or silent (this machine before its
	// identity was lost, most likely). It is said loudly, not only logged.
	Unanswered string
	// Warning, when set, is a problem with the configuration or the
	// heartbeats to tell the user (a runner that names several devices,
	// a claim whose generation no knotd writes).
	Warning string
}

// maxGen is the highest generation of a claim: more takeovers than anyone
// makes (one a second for 68 years). A heartbeat whose generation is
// beyond it, or below 0, claims nothing (Decide says so).
const maxGen = 1<<31 - 1

// Decide decides what the device me (its own heartbeat as last written,
// with its claim, if any) should do, given the other devices' heartbeats,
// the policy, the time now, and whether the user asked this device to
// take over. It is pure: every device that sees the same heartbeats
// reaches the same answer about which device answers.
func Decide(me Heartbeat, others []Heartbeat, p Policy, now time.Time, takeOver bool) Decision {
	others = slices.DeleteFunc(slices.Clone(others), func(h Heartbeat) bool { return h.Device == me.Device })
	var bad []string
	me, bad = validClaim(me, bad)
	for i := range others {
		others[i], bad = validClaim(others[i], bad)
	}
	d := decide(me, others, p, now, takeOver)
	if len(bad) > 0 {
		w := "ignoring the claim of " + strings.Join(bad, ", ") + ": a generation no knotd writes (0 to 2147483647)"
		if d.Warning != "" {
			w = d.Warning + "; " + w
		}
		d.Warning = w
	}
	return d
}

// validClaim returns h without its claim when its generation is out of
// range (a peer's file no knotd wrote), adding its label to bad.
func validClaim(h Heartbeat, bad []string) (Heartbeat, []string) {
	if h.Gen >= 0 && h.Gen <= maxGen {
		return h, bad
	}
	if !h.Claim.IsZero() {
		bad = append(bad, fmt.Sprintf("%s (generation %d)", h.Label(), h.Gen))
	}
	h.Claim, h.Gen, h.Over = time.Time{}, 0, ""
	return h, bad
}

// decide is Decide on valid heartbeats, others without me.
func decide(me Heartbeat, others []Heartbeat, p Policy, now time.Time, takeOver bool) Decision {
	if p.Runner != "" {
		d := byRunner(me, others, p.Runner, now)
		if takeOver && !d.Answer {
			d.Why = "--take-over cannot make this device answer: " + d.Why
		}
		return d
	}
	cur, isMe := bestClaim(me, others)
	switch {
	case takeOver:
		why := "you asked this device to take over"
		if cur != nil && !isMe {
			why += " from " + cur.Label()
		}
		return takeFrom(cur, isMe, now, p, why)
	case cur == nil:
		return Decision{Answer: true, Claim: now, Gen: 1, Why: "no other device answers this vault"}
	case isMe:
		return Decision{Answer: true, Claim: cur.Claim, Gen: max(cur.Gen, 1), Over: cur.Over, Why: "this device answers this vault since " + stamp(cur.Claim)}
	case p.TakeoverAfter > 0 && now.Sub(cur.Beat) >= p.TakeoverAfter:
		return takeFrom(cur, false, now, p,
			fmt.Sprintf("%s has been silent since %s, longer than takeover_after (%v)", cur.Label(), stamp(cur.Beat), p.TakeoverAfter))
	}
	c := *cur
	d := Decision{By: &c, Why: standbyWhy(c, p, now), How: takeOverHow}
	if strings.EqualFold(c.Name, me.Name) && !live(c, now, p) {
		d.Unanswered = fmt.Sprintf("%s, which answers this vault, has this machine's name and has been %s: if it was this machine before knotd's state directory (its device identity) was lost, nobody answers the vault now; run knotd --take-over here to answer it",
			c.Label(), state(c, now))
	}
	return d
}

// takeFrom is the decision to take the vault over from cur (nil: no
// device claims it; isMe: this device already does).
func takeFrom(cur *Heartbeat, isMe bool, now time.Time, p Policy, why string) Decision {
	d := Decision{Answer: true, Claim: now, Gen: 1, Why: why}
	if cur == nil {
		return d
	}
	if isMe {
		d.Claim, d.Gen, d.Over = cur.Claim, max(cur.Gen, 1), cur.Over
		return d
	}
	d.Gen, d.Over = after(*cur)
	if !live(*cur, now, p) {
		return d
	}
	c := *cur
	d.From = &c
	return d
}

// after returns the generation of a claim that takes over cur's, and the
// device it names: one more than cur's, or maxGen when cur's is maxGen
// already (it wins then by naming cur's device, see beats).
func after(cur Heartbeat) (gen int, over string) {
	return min(max(cur.Gen, 1), maxGen-1) + 1, cur.Device
}

// live reports whether the device of h was running when it last wrote its
// heartbeat, and has not been silent since (a stopped or silent device has
// no runs in progress to wait for).
func live(h Heartbeat, now time.Time, p Policy) bool {
	silent := 3 * Interval
	if p.TakeoverAfter > 0 {
		silent = min(silent, p.TakeoverAfter)
	}
	return h.Running && now.Sub(h.Beat) < silent
}

// Stepped reports whether the device whose heartbeat is h (the device a
// takeover waits for, see Decision.From) no longer answers the vault: it
// dropped its claim (it saw the takeover and stood by) or it stopped. The
// caller bounds how long it waits, for a device it cannot hear from.
func Stepped(h Heartbeat) bool {
	return h.Claim.IsZero() || !h.Running
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
		d.Answer, d.Claim, d.Gen, d.Over = true, me.Claim, max(me.Gen, 1), me.Over
		if d.Claim.IsZero() {
			d.Claim, d.Gen, d.Over = now, 1, ""
			if cur, _ := bestClaim(Heartbeat{}, others); cur != nil {
				d.Gen, d.Over = after(*cur)
				if live(*cur, now, Policy{}) {
					c := *cur
					d.From = &c
				}
			}
		}
		d.Why = fmt.Sprintf("the vault config names this device as the answering device (runner: %s)", runner)
		return d
	}
	if len(matches) > 0 {
		by := matches[0]
		d.By = &by
	}
	d.How = fmt.Sprintf("set runner: %s in .knot/config.yaml and restart knotd on each device; --take-over cannot override runner:", me.Name)
	d.Why = fmt.Sprintf("the vault config names %q as the answering device (runner: %s), and this device is %s; to answer from here, %s",
		runner, runner, me.Label(), d.How)
	return d
}

// names reports whether runner names the device of h.
func names(h Heartbeat, runner string) bool {
	return strings.EqualFold(h.Name, runner) || h.Device == runner ||
		len(runner) >= 8 && strings.HasPrefix(h.Device, runner)
}

// bestClaim returns the heartbeat whose claim wins among me and others:
// the highest generation, then the oldest claim, then the lowest id; and
// whether it is me. It is nil when none claims the vault. The heartbeats
// are taken in id order, so that every device that sees the same ones
// reaches the same answer.
func bestClaim(me Heartbeat, others []Heartbeat) (*Heartbeat, bool) {
	var best *Heartbeat
	all := append([]Heartbeat{me}, others...)
	slices.SortStableFunc(all, func(a, b Heartbeat) int { return strings.Compare(a.Device, b.Device) })
	for _, h := range all {
		if h.Claim.IsZero() {
			continue
		}
		if best == nil || beats(h, *best) {
			c := h
			best = &c
		}
	}
	return best, best != nil && best.Device == me.Device
}

// beats reports whether the claim of a wins over that of b.
func beats(a, b Heartbeat) bool {
	ga, gb := max(a.Gen, 1), max(b.Gen, 1)
	switch {
	case ga != gb:
		return ga > gb
	case ga == maxGen && a.Over == b.Device && b.Over != a.Device:
		return true // generations no longer count: a takeover beats the claim it names
	case ga == maxGen && b.Over == a.Device && a.Over != b.Device:
		return false
	case !a.Claim.Equal(b.Claim):
		return a.Claim.Before(b.Claim)
	}
	return a.Device < b.Device
}

// standbyWhy says why a device stands by for cur, and how to change that.
func standbyWhy(cur Heartbeat, p Policy, now time.Time) string {
	how := takeOverHow
	if p.TakeoverAfter > 0 {
		how += fmt.Sprintf("; this device takes over on its own once %s has been silent for %v (takeover_after)", cur.Name, p.TakeoverAfter)
	} else {
		how += ", or let a device take over after a silence with takeover_after:"
	}
	return fmt.Sprintf("%s answers this vault since %s (%s); this device stands by. To answer from here: %s",
		cur.Label(), stamp(cur.Claim), state(cur, now), how)
}

// takeOverHow says what makes a device that stands by for another one's
// claim answer.
const takeOverHow = "knotd --take-over on this device, or name the answering device with runner: in .knot/config.yaml"

// state says, for people, whether the device of h runs.
func state(h Heartbeat, now time.Time) string {
	switch {
	case !h.Running:
		return "stopped since " + stamp(h.Beat)
	case now.Sub(h.Beat) > 3*Interval:
		return "silent since " + stamp(h.Beat)
	}
	return "running, last heard " + stamp(h.Beat)
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
