package device

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

var (
	t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	a  = Heartbeat{Device: "aaaaaaaa-0000-4000-8000-000000000001", Name: "laptop", Running: true, Beat: t0}
	b  = Heartbeat{Device: "bbbbbbbb-0000-4000-8000-000000000002", Name: "desktop", Running: true, Beat: t0}
)

// claim returns h claiming the vault since at (generation 1), last heard
// at beat.
func claim(h Heartbeat, at, beat time.Time) Heartbeat {
	h.Claim, h.Beat = at, beat
	return h
}

// gen returns h with its claim's generation set to g.
func gen(h Heartbeat, g int) Heartbeat {
	h.Gen = g
	return h
}

func TestDecide(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name      string
		me        Heartbeat
		others    []Heartbeat
		policy    Policy
		takeOver  bool
		answer    bool
		claim     time.Time // when answering
		gen       int       // when answering (0: 1)
		from      string    // when answering: the device to wait for
		by        string    // device answering when not this one
		why, warn string    // substrings
	}{
		{name: "alone", me: a, answer: true, claim: now, why: "no other device"},
		{name: "others stand by", me: a, others: []Heartbeat{b}, answer: true, claim: now},
		{name: "my claim stands", me: claim(a, t0, now), others: []Heartbeat{b}, answer: true, claim: t0},
		{name: "another claims", me: a, others: []Heartbeat{claim(b, t0, now)}, by: b.Device, why: "desktop (bbbbbbbb) answers this vault since 2026-11-23T12:00:00Z"},
		// Of two first claims the older wins: a device that did not yet see
		// the answering device's heartbeat (a new device, a sync delay)
		// does not take the vault by claiming it too.
		{name: "an older claim wins", me: claim(a, t0, now), others: []Heartbeat{claim(b, t0.Add(time.Minute), now)}, answer: true, claim: t0},
		{name: "a newer claim loses", me: claim(a, t0.Add(time.Minute), now), others: []Heartbeat{claim(b, t0, now)}, by: b.Device},
		{name: "a newcomer's claim loses", me: claim(a, now, now), others: []Heartbeat{claim(b, t0, now.Add(-time.Minute))}, by: b.Device},
		// A takeover's claim is of a later generation, and wins.
		{name: "a takeover wins", me: claim(a, t0, now), others: []Heartbeat{gen(claim(b, t0.Add(time.Minute), now), 2)}, by: b.Device},
		{name: "the latest takeover wins", me: gen(claim(a, t0.Add(time.Hour), now), 2), others: []Heartbeat{gen(claim(b, t0, now), 3)}, by: b.Device},
		{name: "equal claims: the lowest id", me: claim(b, t0, now), others: []Heartbeat{claim(a, t0, now)}, by: a.Device},
		{name: "equal claims: the lowest id answers", me: claim(a, t0, now), others: []Heartbeat{claim(b, t0, now)}, answer: true, claim: t0},
		{name: "a stopped device keeps its claim", me: a, others: []Heartbeat{func() Heartbeat { h := claim(b, t0, t0); h.Running = false; return h }()}, by: b.Device, why: "stopped since"},
		{name: "silence without takeover_after", me: a, others: []Heartbeat{claim(b, t0, t0)}, by: b.Device, why: "silent since"},
		{name: "silence under takeover_after", me: a, others: []Heartbeat{claim(b, t0, now.Add(-time.Minute))}, policy: Policy{TakeoverAfter: 10 * time.Minute}, by: b.Device, why: "takes over on its own"},
		{name: "silence over takeover_after", me: a, others: []Heartbeat{claim(b, t0, now.Add(-10*time.Minute))}, policy: Policy{TakeoverAfter: 10 * time.Minute}, answer: true, claim: now, gen: 2, why: "longer than takeover_after"},
		{name: "take over", me: a, others: []Heartbeat{claim(b, t0, now)}, takeOver: true, answer: true, claim: now, gen: 2, from: b.Device, why: "you asked"},
		{name: "take over a later generation", me: a, others: []Heartbeat{gen(claim(b, now.Add(time.Hour), now), 4)}, takeOver: true, answer: true, claim: now, gen: 5, from: b.Device},
		{name: "take over from a stopped device: nothing to wait for", me: a, others: []Heartbeat{func() Heartbeat { h := claim(b, t0, now); h.Running = false; return h }()}, takeOver: true, answer: true, claim: now, gen: 2},
		{name: "take over from a silent device: nothing to wait for", me: a, others: []Heartbeat{claim(b, t0, t0)}, takeOver: true, answer: true, claim: now, gen: 2},
		{name: "take over what this device answers", me: claim(a, t0, now), others: []Heartbeat{b}, takeOver: true, answer: true, claim: t0},
		{name: "runner names me", me: a, others: []Heartbeat{claim(b, t0, now)}, policy: Policy{Runner: "LAPTOP"}, answer: true, claim: now, gen: 2, from: b.Device, why: "runner: LAPTOP"},
		{name: "runner names me by id prefix", me: a, others: []Heartbeat{claim(b, t0, now)}, policy: Policy{Runner: "aaaaaaaa"}, answer: true, claim: now, gen: 2, from: b.Device},
		{name: "runner keeps my claim", me: claim(a, t0, now), policy: Policy{Runner: "laptop"}, answer: true, claim: t0},
		{name: "runner names another", me: claim(a, t0, now), others: []Heartbeat{b}, policy: Policy{Runner: "desktop"}, by: b.Device, why: "set runner: laptop"},
		{name: "runner names nobody known", me: claim(a, t0, now), policy: Policy{Runner: "phone"}, why: `names "phone"`},
		{name: "runner beats take over", me: a, others: []Heartbeat{b}, policy: Policy{Runner: "desktop"}, takeOver: true, by: b.Device},
		{name: "an id prefix too short names nobody", me: a, policy: Policy{Runner: "aaaa"}},
		{name: "runner names two devices", me: a, others: []Heartbeat{func() Heartbeat { h := b; h.Name = "laptop"; return h }()}, policy: Policy{Runner: "laptop"}, answer: true, claim: now, warn: "names 2 devices"},
		{name: "runner names two devices, the other wins", me: func() Heartbeat { h := b; h.Name = "laptop"; return h }(), others: []Heartbeat{a}, policy: Policy{Runner: "laptop"}, by: a.Device, warn: "aaaaaaaa"},
		// The caller's own heartbeat is what counts for it, not the copy
		// of its file among the others (it reads its file at start).
		{name: "my own file among the others is ignored", me: a, others: []Heartbeat{claim(a, t0, t0), claim(b, t0.Add(-time.Hour), now)}, by: b.Device},
		{name: "equal claims: the lowest id answers, whoever asks", me: claim(b, t0, now), others: []Heartbeat{claim(a, t0, now)}, by: a.Device},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.me, tt.others, tt.policy, now, tt.takeOver)
			if d.Answer != tt.answer {
				t.Fatalf("Decide = %+v; want Answer %v", d, tt.answer)
			}
			if tt.answer && !d.Claim.Equal(tt.claim) {
				t.Errorf("Claim = %v; want %v", d.Claim, tt.claim)
			}
			if want := max(tt.gen, 1); tt.answer && d.Gen != want {
				t.Errorf("Gen = %d; want %d", d.Gen, want)
			}
			if tt.answer && (d.From == nil) != (tt.from == "") || d.From != nil && d.From.Device != tt.from {
				t.Errorf("From = %+v; want %q", d.From, tt.from)
			}
			if !tt.answer && tt.by != "" && (d.By == nil || d.By.Device != tt.by) {
				t.Errorf("By = %+v; want %s", d.By, tt.by)
			}
			if !strings.Contains(d.Why, tt.why) {
				t.Errorf("Why = %q; want it to say %q", d.Why, tt.why)
			}
			if !strings.Contains(d.Warning, tt.warn) || tt.warn == "" && d.Warning != "" {
				t.Errorf("Warning = %q; want %q", d.Warning, tt.warn)
			}
		})
	}
}

// TestDecide_DevicesAgree: whatever the heartbeats, two devices that see
// the same ones never both answer, and one answers whenever one claims.
func TestDecide_DevicesAgree(t *testing.T) {
	now := t0.Add(time.Hour)
	claims := []time.Time{{}, t0, t0.Add(time.Minute)}
	beats := []time.Time{t0, now}
	runners := []string{"", "laptop", "desktop", "phone"}
	for _, ca := range claims {
		for _, cb := range claims {
			for _, ba := range beats {
				for _, bb := range beats {
					for _, r := range runners {
						for _, g := range [][2]int{{1, 1}, {1, 2}, {3, 2}} {
							ha, hb := gen(claim(a, ca, ba), g[0]), gen(claim(b, cb, bb), g[1])
							p := Policy{Runner: r}
							da := Decide(ha, []Heartbeat{hb}, p, now, false)
							db := Decide(hb, []Heartbeat{ha}, p, now, false)
							if da.Answer && db.Answer && (r != "" || !ca.IsZero() || !cb.IsZero()) {
								t.Errorf("claims %v/%v, runner %q: both devices answer", ca, cb, r)
							}
							if r == "" && (!ca.IsZero() || !cb.IsZero()) && !da.Answer && !db.Answer {
								t.Errorf("claims %v/%v: neither device answers", ca, cb)
							}
						}
					}
				}
			}
		}
	}
}

func openVault(t *testing.T) (*os.Root, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r, dir
}

func TestWriteRead(t *testing.T) {
	vault, dir := openVault(t)
	if hs, err := Read(vault); err != nil || len(hs) != 0 {
		t.Fatalf("Read of a vault without heartbeats = %v, %v", hs, err)
	}
	ha, hb := claim(a, t0, t0.Add(time.Minute)), b
	for _, h := range []Heartbeat{ha, hb, claim(a, t0, t0.Add(2*time.Minute))} {
		if err := Write(vault, h, false); err != nil {
			t.Fatalf("Write(%s) = %v", h.Name, err)
		}
	}
	// What Read must skip: a sync tool's conflict copy and temporary
	// file, a file that does not parse, a file naming another device, a
	// link, and a name that is no device id.
	junk := map[string]string{
		a.Device + ".sync-conflict-20261123-120000-ABCDEFG.json": `{"device":"` + a.Device + `","claim":"2030-01-01T00:00:00Z"}`,
		".syncthing." + b.Device + ".json.tmp":                   "{}",
		"cccccccc-0000-4000-8000-000000000003.json":              "{",
		"dddddddd-0000-4000-8000-000000000004.json":              `{"device":"` + b.Device + `"}`,
		"notes.json": `{"device":"notes"}`,
	}
	for name, content := range junk {
		if err := os.WriteFile(filepath.Join(dir, ".knot", "devices", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if runtime.GOOS != "windows" {
		if err := os.Symlink(filepath.Join(dir, ".knot", "devices", a.Device+".json"), filepath.Join(dir, ".knot", "devices", "eeeeeeee-0000-4000-8000-000000000005.json")); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := Read(vault)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Heartbeat{}
	for _, h := range hs {
		got[h.Device] = h
	}
	if len(got) != 2 || !got[a.Device].Beat.Equal(t0.Add(2*time.Minute)) || !got[a.Device].Claim.Equal(t0) || got[b.Device].Name != "desktop" {
		t.Errorf("Read = %+v; want the two devices' latest heartbeats only", hs)
	}
	if _, err := os.Stat(filepath.Join(dir, ".knot", "devices", ".gitignore")); err == nil {
		t.Error("a .gitignore was written in a vault that is not in git")
	}
}

func TestWrite_KeepsHeartbeatsOutOfGit(t *testing.T) {
	vault, dir := openVault(t)
	if err := Write(vault, a, true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".knot", "devices", ".gitignore"))
	if err != nil || !strings.Contains(string(b), "\n*\n") {
		t.Errorf(".gitignore = %q, %v; want it to ignore everything in the folder", b, err)
	}
	mine := []byte("# my own\n")
	if err := os.WriteFile(filepath.Join(dir, ".knot", "devices", ".gitignore"), mine, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(vault, a, true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ".knot", "devices", ".gitignore")); string(got) != string(mine) {
		t.Errorf("Write replaced a .gitignore that was there: %q", got)
	}
}

func TestWrite_StaysInTheVault(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links")
	}
	vault, dir := openVault(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, ".knot")); err != nil {
		t.Fatal(err)
	}
	if err := Write(vault, a, true); err == nil {
		t.Error("Write through .knot linked out of the vault succeeded")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("Write put %d files outside the vault", len(entries))
	}
	if hs, err := Read(vault); err == nil && len(hs) != 0 {
		t.Errorf("Read through a link out of the vault = %v", hs)
	}
}

// TestDecide_GenerationsFromPeers: a heartbeat's generation is a peer's
// input. One that no knotd writes (beyond maxGen, below 0) claims nothing,
// and says so; a takeover of any claim wins, and keeps winning on every
// device, without overflowing.
func TestDecide_GenerationsFromPeers(t *testing.T) {
	now := t0.Add(time.Hour)
	for _, g := range []int{math.MaxInt64, maxGen + 1, maxGen, maxGen - 1, -1, math.MinInt64} {
		t.Run(fmt.Sprint(g), func(t *testing.T) {
			peer := gen(claim(b, t0, now), g)
			valid := g >= 0 && g <= maxGen
			d := Decide(a, []Heartbeat{peer}, Policy{}, now, false)
			if valid && (d.Answer || d.By == nil || d.By.Device != b.Device) {
				t.Fatalf("Decide with a peer's claim of generation %d = %+v; want to stand by for it", g, d)
			}
			if !valid && (!d.Answer || !strings.Contains(d.Warning, "a generation no knotd writes") || !strings.Contains(d.Warning, b.Device[:8])) {
				t.Fatalf("Decide with a peer's claim of generation %d = %+v; want it ignored, and said", g, d)
			}
			// The user makes this device take over.
			d = Decide(a, []Heartbeat{peer}, Policy{}, now, true)
			if !d.Answer || d.Gen < 1 || d.Gen > maxGen {
				t.Fatalf("take over from generation %d = %+v; want to answer with a generation in 1..maxGen", g, d)
			}
			mine := a
			mine.Claim, mine.Gen, mine.Over = d.Claim, d.Gen, d.Over
			later := now.Add(time.Minute)
			if d := Decide(mine, []Heartbeat{peer}, Policy{}, later, false); !d.Answer {
				t.Errorf("after taking over from generation %d, this device = %+v; want it to keep answering", g, d)
			}
			if d := Decide(peer, []Heartbeat{mine}, Policy{}, later, false); d.Answer {
				t.Errorf("after the takeover from generation %d, the peer = %+v; want it to stand by", g, d)
			}
			c := Heartbeat{Device: "cccccccc-0000-4000-8000-000000000003", Name: "phone", Running: true, Beat: later}
			for _, order := range [][]Heartbeat{{peer, mine}, {mine, peer}} {
				if d := Decide(c, order, Policy{}, later, false); d.Answer || d.By == nil || d.By.Device != a.Device {
					t.Errorf("a third device, after the takeover from generation %d, = %+v; want it to stand by for the device that took over", g, d)
				}
			}
		})
	}
}

// TestDecide_SaysWhatToDo: a device that stands by says what makes it
// answer; under runner: that is the config, not --take-over, which cannot
// override it. When the device it stands by for has this machine's name
// and is stopped or silent (this machine before its state directory was
// lost, most likely), it says that nobody may answer the vault.
func TestDecide_SaysWhatToDo(t *testing.T) {
	now := t0.Add(time.Hour)
	named := func(h Heartbeat, name string) Heartbeat { h.Name = name; return h }
	stopped := func(h Heartbeat) Heartbeat { h.Running = false; return h }
	tests := []struct {
		name       string
		me         Heartbeat
		others     []Heartbeat
		policy     Policy
		takeOver   bool
		why, how   string // substrings
		notHow     string
		unanswered string // substring; "" for none
	}{
		{name: "another device answers", me: a, others: []Heartbeat{claim(b, t0, now)}, how: "knotd --take-over"},
		{name: "runner names another", me: a, others: []Heartbeat{claim(b, t0, now)}, policy: Policy{Runner: "desktop"},
			how: "set runner: laptop in .knot/config.yaml", notHow: "--take-over on"},
		{name: "take over under runner", me: a, others: []Heartbeat{claim(b, t0, now)}, policy: Policy{Runner: "desktop"}, takeOver: true,
			why: "--take-over cannot make this device answer", how: "--take-over cannot override runner:"},
		{name: "my old self, stopped", me: a, others: []Heartbeat{stopped(named(claim(b, t0, t0), "Laptop"))}, how: "knotd --take-over",
			unanswered: "Laptop (bbbbbbbb), which answers this vault, has this machine's name and has been stopped since 2026-11-23T12:00:00Z"},
		{name: "my old self, silent", me: a, others: []Heartbeat{named(claim(b, t0, t0), "laptop")},
			unanswered: "has been silent since 2026-11-23T12:00:00Z: if it was this machine before knotd's state directory"},
		{name: "another machine of the same name, running", me: a, others: []Heartbeat{named(claim(b, t0, now), "laptop")}},
		{name: "another name, stopped", me: a, others: []Heartbeat{stopped(claim(b, t0, t0))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.me, tt.others, tt.policy, now, tt.takeOver)
			if d.Answer {
				t.Fatalf("Decide = %+v; want to stand by", d)
			}
			if !strings.Contains(d.Why, tt.why) || !strings.Contains(d.How, tt.how) || d.How == "" {
				t.Errorf("Why = %q, How = %q; want them to say %q and %q", d.Why, d.How, tt.why, tt.how)
			}
			if tt.notHow != "" && (strings.Contains(d.How, tt.notHow) || strings.Contains(d.Why, tt.notHow)) {
				t.Errorf("Why = %q, How = %q; want no %q", d.Why, d.How, tt.notHow)
			}
			if tt.unanswered == "" && d.Unanswered != "" || !strings.Contains(d.Unanswered, tt.unanswered) {
				t.Errorf("Unanswered = %q; want %q", d.Unanswered, tt.unanswered)
			}
			if tt.unanswered != "" && !strings.Contains(d.Unanswered, "knotd --take-over") {
				t.Errorf("Unanswered = %q; want it to say how to answer", d.Unanswered)
			}
		})
	}
}

// TestRead_ManyDevices: more than a thousand files in the folder (devices
// that came and went) never make a device lose its own heartbeat or the
// answering device's, however old they are; the others read are the
// latest, and Read says that it left some.
func TestRead_ManyDevices(t *testing.T) {
	vault, dir := openVault(t)
	mine, answering := a, claim(b, t0, t0)
	for _, h := range []Heartbeat{mine, answering} {
		if err := Write(vault, h, false); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, h := range []Heartbeat{mine, answering} {
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(Name(h.Device))), old, old); err != nil {
			t.Fatal(err)
		}
	}
	const n = 1100
	newest := ""
	for i := range n {
		h := Heartbeat{Device: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Name: fmt.Sprint("gone", i), Beat: t0}
		if err := Write(vault, h, false); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(time.Duration(i-n) * time.Second)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(Name(h.Device))), at, at); err != nil {
			t.Fatal(err)
		}
		newest = h.Device
	}
	ids := func(hs []Heartbeat) map[string]bool {
		m := map[string]bool{}
		for _, h := range hs {
			m[h.Device] = true
		}
		return m
	}
	hs, err := Read(vault, mine.Device, answering.Device)
	if !errors.Is(err, ErrTooMany) || !strings.Contains(err.Error(), "more than 1024") {
		t.Errorf("Read of %d heartbeats: err = %v; want it to say it read 1024 of the others", n+2, err)
	}
	got := ids(hs)
	if len(hs) != 1024+2 || !got[mine.Device] || !got[answering.Device] || !got[newest] || got["00000000-0000-4000-8000-000000000000"] {
		t.Errorf("Read = %d heartbeats (mine %v, the answering device's %v, the newest %v, the oldest %v); want 1026: mine, the answering device's, and the 1024 latest",
			len(hs), got[mine.Device], got[answering.Device], got[newest], got["00000000-0000-4000-8000-000000000000"])
	}
	hs, err = ReadAll(vault, mine.Device)
	if got := ids(hs); err != nil || len(hs) != n+2 || !got[answering.Device] {
		t.Errorf("ReadAll = %d heartbeats, %v; want all %d", len(hs), err, n+2)
	}
	if h, ok := ReadOne(vault, answering.Device); !ok || !h.Claim.Equal(t0) {
		t.Errorf("ReadOne = %+v, %v; want the answering device's claim", h, ok)
	}
}
