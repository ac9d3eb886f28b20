package tieoff

import (
	"bytes"
	"strings"
	"testing"
)

// handAt is a hand-written section (no run marker) between runs 2 and 3
// of mergeSections.
const handAt = "## Event: Modified\n## Strand: ideas/plan.md\n## Timestamp: 2026-11-21T19:32:30Z\n\nTyped by hand.\n"

func TestMerge3(t *testing.T) {
	const notes = "My notes on this plan.\n\n"
	edit := func(doc []byte, old, new string) []byte {
		t.Helper()
		if !bytes.Contains(doc, []byte(old)) {
			t.Fatalf("no %q in the test's tie-off", old)
		}
		return bytes.Replace(doc, []byte(old), []byte(new), 1)
	}
	join := func(docs ...[]byte) []byte {
		var out []byte
		for _, d := range docs {
			if len(out) > 0 {
				out = append(out, separator...)
			}
			out = append(out, d...)
		}
		return out
	}
	hand := []byte(handAt)
	tests := []struct {
		name               string
		base, ours, theirs []byte
		want               []byte // the result when clean
		conflicts          int
		// For a conflict: texts the result must hold between markers
		// (besides every section of ours and theirs).
		inConflict []string
	}{
		// Clean merges.
		{name: "both appended", base: tieOff(t, 0, 1), ours: tieOff(t, 0, 1, 3), theirs: tieOff(t, 0, 1, 2), want: tieOff(t, 0, 1, 2, 3)},
		{name: "both appended, interleaved", base: tieOff(t, 0), ours: tieOff(t, 0, 2, 4), theirs: tieOff(t, 0, 1, 3, 5), want: tieOff(t, 0, 1, 2, 3, 4, 5)},
		{name: "both created it (no base)", base: nil, ours: tieOff(t, 0, 2), theirs: tieOff(t, 1), want: tieOff(t, 0, 1, 2)},
		{name: "the same appended on both (a cherry-pick)", base: tieOff(t, 0), ours: tieOff(t, 0, 1, 2), theirs: tieOff(t, 0, 1), want: tieOff(t, 0, 1, 2)},
		{name: "one side only", base: tieOff(t, 0), ours: tieOff(t, 0), theirs: tieOff(t, 0, 1), want: tieOff(t, 0, 1)},
		{name: "replace mode on ours", base: tieOff(t, 0), ours: tieOff(t, 2), theirs: tieOff(t, 0, 1), want: tieOff(t, 1, 2)},
		{name: "replace mode on both", base: tieOff(t, 0), ours: tieOff(t, 1), theirs: tieOff(t, 2), want: tieOff(t, 1, 2)},
		{name: "theirs removed the oldest, ours appended", base: tieOff(t, 0, 1), ours: tieOff(t, 0, 1, 3), theirs: tieOff(t, 1, 2), want: tieOff(t, 1, 2, 3)},
		{name: "theirs edited a past section, ours appended", base: tieOff(t, 0, 1), ours: tieOff(t, 0, 1, 2),
			theirs: edit(tieOff(t, 0, 1), "Second thoughts.", "Second thoughts, edited."), want: edit(tieOff(t, 0, 1, 2), "Second thoughts.", "Second thoughts, edited.")},
		{name: "ours edited a past section, theirs appended", base: tieOff(t, 0, 1), ours: edit(tieOff(t, 0, 1), "- two", "- two\n- three"),
			theirs: tieOff(t, 0, 1, 2), want: edit(tieOff(t, 0, 1, 2), "- two", "- two\n- three")},
		{name: "the same edit on both", base: tieOff(t, 0, 1), ours: edit(tieOff(t, 0, 1, 3), "- two", "- 2"),
			theirs: edit(tieOff(t, 0, 1, 2), "- two", "- 2"), want: edit(tieOff(t, 0, 1, 2, 3), "- two", "- 2")},
		{name: "a hand-written section on theirs", base: tieOff(t, 0), ours: tieOff(t, 0, 3), theirs: join(tieOff(t, 0, 2), hand),
			want: join(tieOff(t, 0, 2), hand, tieOff(t, 3))},
		{name: "a hand-written section in base, kept", base: join(tieOff(t, 0), hand), ours: join(tieOff(t, 0), hand, tieOff(t, 4)),
			theirs: join(tieOff(t, 0), hand, tieOff(t, 3)), want: join(tieOff(t, 0), hand, tieOff(t, 3, 4))},
		{name: "ours mends its torn section", base: tieOff(t, 0), ours: cut(tieOff(t, 0, 1), 5), theirs: tieOff(t, 0, 1, 2), want: tieOff(t, 0, 1, 2)},
		{name: "theirs' torn section is ours' start", base: tieOff(t, 0), ours: tieOff(t, 0, 1, 3), theirs: cut(tieOff(t, 0, 1), 5), want: tieOff(t, 0, 1, 3)},
		{name: "theirs mended base's torn section", base: cut(tieOff(t, 0, 1), 5), ours: cut(tieOff(t, 0, 1), 5), theirs: tieOff(t, 0, 1, 2), want: tieOff(t, 0, 1, 2)},
		{name: "text before the first section added on theirs", base: tieOff(t, 0), ours: tieOff(t, 0, 1), theirs: append([]byte(notes), tieOff(t, 0, 2)...),
			want: append([]byte(notes), tieOff(t, 0, 1, 2)...)},
		{name: "CRLF on theirs", base: tieOff(t, 0), ours: tieOff(t, 0, 2), theirs: bytes.ReplaceAll(tieOff(t, 0, 1), []byte("\n"), []byte("\r\n")),
			want: join(tieOff(t, 0), bytes.ReplaceAll(tieOff(t, 1), []byte("\n"), []byte("\r\n")), tieOff(t, 2))},
		{name: "a replaced section in the middle keeps the separators", base: tieOff(t, 0, 1, 2), ours: tieOff(t, 0, 1, 2, 4),
			theirs: edit(tieOff(t, 0, 1, 2, 3), "Second thoughts.", "Edited."), want: edit(tieOff(t, 0, 1, 2, 3, 4), "Second thoughts.", "Edited.")},
		{name: "ours removed the last of base", base: tieOff(t, 0, 1), ours: tieOff(t, 0), theirs: tieOff(t, 0, 1, 2), want: tieOff(t, 0, 2)},

		// Conflicts.
		{name: "both edited a section", base: tieOff(t, 0, 1), ours: edit(tieOff(t, 0, 1, 3), "- two", "- ours"),
			theirs: edit(tieOff(t, 0, 1, 2), "- two", "- theirs"), conflicts: 1, inConflict: []string{"- ours", "- two", "- theirs"}},
		{name: "ours removed, theirs edited", base: tieOff(t, 0, 1), ours: tieOff(t, 1, 3),
			theirs: edit(tieOff(t, 0, 1, 2), "- two", "- theirs"), conflicts: 1, inConflict: []string{"- theirs", "- two"}},
		{name: "ours edited, theirs removed", base: tieOff(t, 0, 1), ours: edit(tieOff(t, 0, 1, 3), "- two", "- ours"),
			theirs: tieOff(t, 1, 2), conflicts: 1, inConflict: []string{"- ours", "- two"}},
		{name: "the same run added with different text", base: tieOff(t, 0), ours: tieOff(t, 0, 1),
			theirs: edit(tieOff(t, 0, 1), "Second thoughts.", "Other thoughts."), conflicts: 1, inConflict: []string{"Second thoughts.", "Other thoughts."}},
		{name: "broken headers added on theirs", base: tieOff(t, 0), ours: tieOff(t, 0, 2),
			theirs: join(tieOff(t, 0), []byte("## Event: Modified\nI deleted the rest.\n")), conflicts: 1, inConflict: []string{"I deleted the rest."}},
		{name: "both changed the text before the first section", base: tieOff(t, 0), ours: append([]byte("Ours.\n\n"), tieOff(t, 0, 1)...),
			theirs: append([]byte("Theirs.\n\n"), tieOff(t, 0, 2)...), conflicts: 1, inConflict: []string{"Ours.", "Theirs."}},
		{name: "theirs is not a tie-off", base: tieOff(t, 0), ours: tieOff(t, 0, 1), theirs: []byte("A shopping list.\n"),
			conflicts: 1, inConflict: []string{"A shopping list.", string(tieOff(t, 0, 1)), string(tieOff(t, 0))}},
		{name: "base is not a tie-off", base: []byte("Plain text.\n"), ours: tieOff(t, 0), theirs: tieOff(t, 1),
			conflicts: 1, inConflict: []string{"Plain text."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, conflicts := Merge3(tt.base, tt.ours, tt.theirs)
			if len(conflicts) != tt.conflicts {
				t.Fatalf("conflicts = %v; want %d\n%s", conflicts, tt.conflicts, got)
			}
			if tt.conflicts == 0 {
				if !bytes.Equal(got, tt.want) {
					t.Errorf("Merge3 =\n%s\nwant\n%s", got, tt.want)
				}
				if bytes.Contains(got, []byte("<<<<<<<")) {
					t.Errorf("a clean merge with conflict markers:\n%s", got)
				}
				secs, _ := Parse(got)
				if twice(got) || !timeOrdered(secs) {
					t.Errorf("runs %s: not each once in time order", runIDs(secs))
				}
				// Either side's view gives the same sections.
				back, c := Merge3(tt.base, tt.theirs, tt.ours)
				rs, _ := Parse(back)
				if len(c) != 0 || runIDs(rs) != runIDs(secs) {
					t.Errorf("theirs and ours swapped: runs %s, conflicts %v; want %s", runIDs(rs), c, runIDs(secs))
				}
				return
			}
			checkConflict(t, got, tt.ours, tt.theirs)
			for _, s := range tt.inConflict {
				if !bytes.Contains(got, []byte(s)) {
					t.Errorf("the result lacks %q:\n%s", s, got)
				}
			}
		})
	}
}

// checkConflict checks that got, a conflicted merge of ours and theirs,
// has well-formed conflict markers and holds every section of both.
func checkConflict(t *testing.T, got, ours, theirs []byte) {
	t.Helper()
	var state string
	blocks := 0
	for _, l := range strings.SplitAfter(string(got), "\n") {
		switch l {
		case markerOurs:
			if state != "" {
				t.Fatalf("nested conflict markers:\n%s", got)
			}
			state = "ours"
			blocks++
		case markerBase:
			if state != "ours" {
				t.Fatalf("||||||| out of place:\n%s", got)
			}
			state = "base"
		case markerSplit:
			if state != "ours" && state != "base" {
				t.Fatalf("======= out of place:\n%s", got)
			}
			state = "theirs"
		case markerTheirs:
			if state != "theirs" {
				t.Fatalf(">>>>>>> out of place:\n%s", got)
			}
			state = ""
		}
	}
	if blocks == 0 || state != "" {
		t.Fatalf("%d conflict blocks, the last one open: %v:\n%s", blocks, state != "", got)
	}
	for _, side := range [][]byte{ours, theirs} {
		p := parseDoc(side)
		if pre := normPreamble(p.x.src[:p.first]); !bytes.Contains(got, pre) {
			t.Errorf("the result lacks the text %q:\n%s", pre, got)
		}
		for i := range p.chunks {
			if raw := normText(p.chunkRaw(i)); !bytes.Contains(got, raw) {
				t.Errorf("the result lacks a section:\n%s\n-- result:\n%s", raw, got)
			}
		}
	}
}

func timeOrdered(secs []Section) bool {
	for i := 1; i < len(secs); i++ {
		if keyOf(secs[i]).less(keyOf(secs[i-1])) {
			return false
		}
	}
	return true
}

// FuzzMerge3 merges arbitrary versions of a tie-off, seeded with tie-offs
// knotd writes and their hand edits. Merge3 must not panic; every section
// that either side added or changed (base has no section of that run, or
// another text) must be in the result, between conflict markers or not; a
// conflicted result has markers, and a clean one none of its own making.
func FuzzMerge3(f *testing.F) {
	tb := f
	seeds := [][3][]byte{
		{tieOff(tb, 0, 1), tieOff(tb, 0, 1, 3), tieOff(tb, 0, 1, 2)},
		{nil, tieOff(tb, 0, 2), tieOff(tb, 1)},
		{tieOff(tb, 0), tieOff(tb, 2), tieOff(tb, 0, 1)},
		{tieOff(tb, 0, 1), bytes.Replace(tieOff(tb, 0, 1, 3), []byte("- two"), []byte("- ours"), 1), bytes.Replace(tieOff(tb, 0, 1, 2), []byte("- two"), []byte("- theirs"), 1)},
		{tieOff(tb, 0), cut(tieOff(tb, 0, 1), 5), append(tieOff(tb, 0, 2), "\n---\n\n"+handAt...)},
		{tieOff(tb, 0), append([]byte("notes\n\n"), tieOff(tb, 0, 4)...), []byte("not a tie-off\n")},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		got, conflicts := Merge3(base, ours, theirs)
		markers := bytes.Count(got, []byte(markerOurs)) - bytes.Count(ours, []byte(markerOurs)) - bytes.Count(theirs, []byte(markerOurs))
		if len(conflicts) > 0 && (markers <= 0 || !bytes.Contains(got, []byte(markerTheirs))) {
			t.Fatalf("conflicts %v without markers:\n%q", conflicts, got)
		}
		if len(conflicts) == 0 && markers > 0 {
			t.Fatalf("a clean result with conflict markers:\n%q", got)
		}
		lf := normText(got)
		bp := parseDoc(base)
		bi := index(bp)
		for _, side := range [][]byte{ours, theirs} {
			p := parseDoc(side)
			for i := range p.chunks {
				raw := normText(p.chunkRaw(i))
				if j, inBase := bi[keyOfChunk(p, i)]; inBase && sameText(bp.chunkRaw(j), raw) || p.torn(i) {
					continue // unchanged (another side may remove it), or a longer version may stand for it
				}
				if !bytes.Contains(lf, raw) {
					t.Fatalf("the result (conflicts %v) lacks a section added or changed on one side:\n%q\n-- base %q\n-- ours %q\n-- theirs %q\n-- result:\n%q", conflicts, raw, base, ours, theirs, got)
				}
			}
		}
	})
}

// FuzzMerge3Runs merges tie-offs knotd wrote, each holding any of the six
// runs of mergeSections in time order: base, and ours and theirs, which
// appended some and removed some (replace mode). The merge is clean and
// holds, in time order, once each, every run ours or theirs holds that
// neither removed from base.
func FuzzMerge3Runs(f *testing.F) {
	f.Add(uint8(0b11), uint8(0b1011), uint8(0b111))
	f.Add(uint8(0b1), uint8(0b100), uint8(0b11))
	f.Add(uint8(0), uint8(0b10101), uint8(0b101010))
	f.Fuzz(func(t *testing.T, base, ours, theirs uint8) {
		doc := func(mask uint8) []byte {
			var runs []int
			for i := range 6 {
				if mask&(1<<i) != 0 {
					runs = append(runs, i)
				}
			}
			return tieOff(t, runs...)
		}
		got, conflicts := Merge3(doc(base), doc(ours), doc(theirs))
		if len(conflicts) > 0 {
			t.Fatalf("conflicts %v", conflicts)
		}
		base, ours, theirs = base&63, ours&63, theirs&63
		want := (ours | theirs) &^ (base &^ ours) &^ (base &^ theirs)
		if !bytes.Equal(got, doc(want)) {
			t.Fatalf("Merge3 of runs %06b, %06b, %06b =\n%s\nwant runs %06b:\n%s", base, ours, theirs, got, want, doc(want))
		}
	})
}
