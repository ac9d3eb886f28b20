package tieoff

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/strand"
)

// mergeSections are the runs the merge tests deal out to two devices, in
// time order: run i at t0+i minutes.
func mergeSections() []Section {
	fail := mkSection(3, strand.Modified, "ideas/plan.md", Failure{What: "agent claude exited with status 1", ExitStatus: 1}.Body())
	fail.Failed = true
	fail.Hash = testHash
	secs := []Section{
		mkSection(0, strand.Created, "ideas/plan.md", "# Review\n\n- one\n- two\n"),
		mkSection(1, strand.Modified, "ideas/plan.md", "Second thoughts.\n\n```go\nfunc f() {}\n```\n"),
		mkSection(2, strand.Modified, "ideas/plan.md", "A reply without a final newline"),
		fail,
		mkSection(4, strand.Modified, "ideas/plan.md", "> quoted\n\nLast words.\n"),
		mkSection(5, strand.Deleted, "ideas/plan.md", "Gone.\n"),
	}
	for i := range secs {
		if i%2 == 0 {
			secs[i].Hash, secs[i].Session = testHash, testSession
		}
	}
	return secs
}

// tieOff builds a tie-off of the given runs of mergeSections, as Append
// writes them.
func tieOff(t testing.TB, runs ...int) []byte {
	t.Helper()
	all := mergeSections()
	var doc []byte
	for _, i := range runs {
		doc = appendBytes(t, doc, all[i])
	}
	return doc
}

func runIDs(secs []Section) string {
	var ids []string
	for _, s := range secs {
		id := "-"
		if len(s.RunID) > 2 {
			id = s.RunID[len(s.RunID)-2:]
		}
		ids = append(ids, id)
	}
	return strings.Join(ids, " ")
}

func TestMerge(t *testing.T) {
	const notes = "My notes on this plan.\n\n"
	handSection := "## Event: Modified\n## Strand: ideas/plan.md\n## Timestamp: 2026-11-21T20:00:00Z\n\nTyped by hand.\n"
	withHand := func(doc []byte) []byte { return append(append(bytes.Clone(doc), separator...), handSection...) }
	b := tieOff(t, 0, 1)
	edited := bytes.Replace(tieOff(t, 0, 1), []byte("Second thoughts."), []byte("Second thoughts, edited."), 1)
	noted := bytes.Replace(tieOff(t, 0, 1, 2), []byte("- two\n"), []byte("- two\n\nMy note under the first reply.\n"), 1)
	openFence := append(tieOff(t, 1, 2), "\n\n```\ncode typed at the end"...)
	tests := []struct {
		name           string
		original, copy []byte
		want           []byte // the merged bytes
		added, mended  int
		present        int
		leftOut        int
		problems       int // Parse's problems in the result
	}{
		{name: "copy has newer runs", original: tieOff(t, 0, 1), copy: tieOff(t, 0, 1, 2, 3), want: tieOff(t, 0, 1, 2, 3), added: 2, present: 2},
		{name: "interleaved", original: tieOff(t, 0, 2, 4), copy: tieOff(t, 1, 3, 5), want: tieOff(t, 0, 1, 2, 3, 4, 5), added: 3},
		{name: "both appended after a shared history", original: tieOff(t, 0, 1, 3), copy: tieOff(t, 0, 1, 2), want: tieOff(t, 0, 1, 2, 3), added: 1, present: 2},
		{name: "copy older than everything", original: tieOff(t, 4, 5), copy: tieOff(t, 0, 1), want: tieOff(t, 0, 1, 4, 5), added: 2},
		{name: "identical", original: tieOff(t, 0, 1, 2), copy: tieOff(t, 0, 1, 2), want: tieOff(t, 0, 1, 2), present: 3},
		{name: "copy holds less", original: tieOff(t, 0, 1, 2), copy: tieOff(t, 1), want: tieOff(t, 0, 1, 2), present: 1},
		{name: "a run twice in the copy", original: tieOff(t, 0), copy: tieOff(t, 0, 1, 1), want: tieOff(t, 0, 1), added: 1, present: 2},
		{name: "empty original", original: nil, copy: tieOff(t, 0, 1), want: tieOff(t, 0, 1), added: 2},
		{name: "blank original", original: []byte("\n\n"), copy: tieOff(t, 0), want: append([]byte("\n\n"), tieOff(t, 0)...), added: 1},
		{name: "empty copy", original: tieOff(t, 0), copy: nil, want: tieOff(t, 0)},
		{name: "CRLF copy of the same runs", original: tieOff(t, 0, 1), copy: bytes.ReplaceAll(tieOff(t, 0, 1), []byte("\n"), []byte("\r\n")), want: tieOff(t, 0, 1), present: 2},
		{name: "BOM in the copy", original: tieOff(t, 0), copy: append([]byte(bom), tieOff(t, 0, 1)...), want: tieOff(t, 0, 1), added: 1, present: 1},

		// Torn sections.
		{name: "original torn, copy whole", original: cut(tieOff(t, 0, 1), 5), copy: tieOff(t, 0, 1, 2), want: tieOff(t, 0, 1, 2), mended: 1, added: 1, present: 1},
		{name: "original torn, copy holds it torn longer", original: cut(tieOff(t, 0, 1), 9), copy: cut(tieOff(t, 0, 1), 2), want: cut(tieOff(t, 0, 1), 2), mended: 1, present: 1, problems: 1},
		{name: "copy torn, original whole", original: tieOff(t, 0, 1, 2), copy: cut(tieOff(t, 0, 1, 2), 5), want: tieOff(t, 0, 1, 2), present: 3},
		{name: "copy's new run torn", original: tieOff(t, 0), copy: cut(tieOff(t, 0, 1), 5), want: tieOff(t, 0), present: 1, leftOut: 1},
		{name: "original torn, copy lacks the run", original: cut(tieOff(t, 0, 3), 5), copy: tieOff(t, 0, 1), want: append(append(tieOff(t, 0, 1), separator...), cut(tieOff(t, 3), 5)...), added: 1, present: 1, problems: 1},

		// Hand edits.
		{name: "preamble in the original stays at the top", original: append([]byte(notes), tieOff(t, 1, 3)...), copy: tieOff(t, 0, 2), want: append([]byte(notes), tieOff(t, 0, 1, 2, 3)...), added: 2, problems: 1},
		{name: "the same preamble in both", original: append([]byte(notes), tieOff(t, 0)...), copy: append([]byte(notes), tieOff(t, 0, 1)...), want: append([]byte(notes), tieOff(t, 0, 1)...), added: 1, present: 1, problems: 1},
		{name: "preamble only in the copy", original: tieOff(t, 0), copy: append([]byte(notes), tieOff(t, 0, 1)...), want: tieOff(t, 0, 1), added: 1, present: 1, leftOut: 1},
		{name: "hand-written section in the copy", original: tieOff(t, 0), copy: withHand(tieOff(t, 0)), want: tieOff(t, 0), present: 1, leftOut: 1},
		{name: "hand-written section in both", original: withHand(b), copy: withHand(b), want: withHand(b), present: 3},
		{name: "reply edited in the copy", original: tieOff(t, 0, 1), copy: edited, want: tieOff(t, 0, 1), present: 1, leftOut: 1},
		{name: "note typed under a reply in the copy", original: tieOff(t, 0, 1), copy: noted, want: tieOff(t, 0, 1, 2), added: 1, present: 1, leftOut: 1},
		{name: "broken headers in the copy", original: tieOff(t, 0), copy: append(append(tieOff(t, 0), separator...), "## Event: Modified\nI deleted the rest.\n"...), want: tieOff(t, 0), present: 1, leftOut: 1},
		{name: "copy's section left a fence open", original: tieOff(t, 0, 3), copy: openFence, want: append(append(tieOff(t, 0, 1), separator...), append(append(bytes.Clone(openFence[len(tieOff(t, 1))+len(separator):]), "\n```\n"+separator...), tieOff(t, 3)...)...), added: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rep := Merge(tt.original, tt.copy)
			if !bytes.Equal(got, tt.want) {
				t.Errorf("Merge =\n%s\nwant\n%s", got, tt.want)
			}
			if rep.Added != tt.added || rep.Mended != tt.mended || rep.Present != tt.present || len(rep.LeftOut) != tt.leftOut {
				t.Errorf("report = added %d, mended %d, present %d, left out %s; want %d, %d, %d, %d",
					rep.Added, rep.Mended, rep.Present, problemsString(rep.LeftOut), tt.added, tt.mended, tt.present, tt.leftOut)
			}
			if rep.Complete() != (tt.leftOut == 0) || rep.Removed {
				t.Errorf("Complete = %v, Removed = %v", rep.Complete(), rep.Removed)
			}
			for _, l := range rep.LeftOut {
				if l.Text == "" || !bytes.Contains(tt.copy, []byte(l.Text)) || l.Line < 1 {
					t.Errorf("left out %d %q with text %q: not the copy's", l.Line, l.Msg, l.Text)
				}
			}
			_, probs := Parse(got)
			if len(probs) != tt.problems {
				t.Errorf("Parse(merged) problems = %s; want %d", problemsString(probs), tt.problems)
			}
			// Idempotent: merging the same copy again adds nothing.
			again, rep2 := Merge(got, tt.copy)
			if !bytes.Equal(again, got) || rep2.Added != 0 || rep2.Mended != 0 || len(rep2.LeftOut) != tt.leftOut {
				t.Errorf("merging again changed the result or the report: added %d, mended %d, left out %s", rep2.Added, rep2.Mended, problemsString(rep2.LeftOut))
			}
			// Commutative when nothing is left out either way and no input
			// holds a run twice.
			back, rep3 := Merge(tt.copy, tt.original)
			if rep.Complete() && rep3.Complete() && !twice(tt.original) && !twice(tt.copy) {
				a, _ := Parse(got)
				b, _ := Parse(back)
				if runIDs(a) != runIDs(b) {
					t.Errorf("Merge(original, copy) runs %s; Merge(copy, original) runs %s", runIDs(a), runIDs(b))
				}
				for i := range min(len(a), len(b)) {
					if lf(a[i].Body) != lf(b[i].Body) || a[i].Hash != b[i].Hash || a[i].Session != b[i].Session {
						t.Errorf("section %d differs between the two directions", i)
					}
				}
			}
		})
	}
}

func cut(b []byte, n int) []byte { return b[:len(b)-n] }

func lf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// twice reports whether a tie-off holds a run more than once.
func twice(doc []byte) bool {
	secs, _ := Parse(doc)
	seen := make(map[string]bool)
	for _, s := range secs {
		if s.RunID != "" && seen[s.RunID] {
			return true
		}
		seen[s.RunID] = true
	}
	return false
}

// TestMerge_Union: merging tie-offs without problems gives every run of
// both once, each section as it stood, in time order.
func TestMerge_Union(t *testing.T) {
	all := mergeSections()
	for mask := range 1 << len(all) {
		var a, b []int
		for i := range all {
			if mask&(1<<i) != 0 {
				a = append(a, i)
			} else {
				b = append(b, i)
			}
		}
		b = append(b, a[:len(a)/2]...) // some runs in both
		for _, pair := range [][2][]int{{a, b}, {b, a}} {
			orig, cp := tieOff(t, sorted(pair[0])...), tieOff(t, sorted(pair[1])...)
			got, rep := Merge(orig, cp)
			if !rep.Complete() {
				t.Fatalf("Merge(%v, %v) left out %s", pair[0], pair[1], problemsString(rep.LeftOut))
			}
			secs, probs := Parse(got)
			if len(probs) > 0 {
				t.Fatalf("Merge(%v, %v) problems %s", pair[0], pair[1], problemsString(probs))
			}
			if len(secs) != len(all) {
				t.Fatalf("Merge(%v, %v) = %d sections; want %d", pair[0], pair[1], len(secs), len(all))
			}
			for i := range all {
				if err := sameSection(secs[i], written(all[i])); err != nil {
					t.Fatalf("Merge(%v, %v) section %d: %v", pair[0], pair[1], i, err)
				}
			}
			if want := tieOff(t, 0, 1, 2, 3, 4, 5); !bytes.Equal(got, want) {
				t.Fatalf("Merge(%v, %v) is not the tie-off Append writes:\n%s", pair[0], pair[1], got)
			}
		}
	}
}

func sorted(runs []int) []int { return slices.Sorted(slices.Values(runs)) }

// FuzzMerge merges arbitrary inputs: Merge never panics, the result
// parses, original's sections are all in it, and merging the copy again
// adds nothing. When neither input has a problem nor a run twice, every
// run of both is in the result exactly once and the result has no
// problems.
func FuzzMerge(f *testing.F) {
	seeds := [][2][]byte{
		{tieOff(f, 0, 2, 4), tieOff(f, 1, 3, 5)},
		{tieOff(f, 0, 1), tieOff(f, 0, 1, 2)},
		{cut(tieOff(f, 0, 1), 5), tieOff(f, 0, 1, 2)},
		{tieOff(f, 0), cut(tieOff(f, 0, 1), 5)},
		{append([]byte("notes\n\n"), tieOff(f, 1)...), tieOff(f, 0, 2)},
		{tieOff(f, 0, 3), append(tieOff(f, 1, 2), "\n\n```\nopen"...)},
		{tieOff(f, 0), append(tieOff(f, 1), "\n<!-- open"...)},
		{bytes.ReplaceAll(tieOff(f, 0, 1), []byte("\n"), []byte("\r\n")), tieOff(f, 2)},
		{nil, tieOff(f, 0)},
		{tieOff(f, 0), nil},
	}
	if golden, err := os.ReadFile(goldenPath); err == nil {
		seeds = append(seeds, [2][]byte{golden, tieOff(f, 0, 5)})
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, original, conflict []byte) {
		merged, rep := Merge(original, conflict)
		secs, probs := Parse(merged)
		osecs, oprobs := Parse(original)
		csecs, cprobs := Parse(conflict)
		if rep.Added > len(csecs) || rep.Mended > 1 {
			t.Fatalf("report %+v for a copy of %d sections", rep, len(csecs))
		}
		if rep.Mended == 0 {
			if len(merged) < len(original) {
				t.Fatalf("merged is shorter than the original")
			}
			for _, s := range osecs {
				if !bytes.Contains(merged, []byte(s.Body)) {
					t.Fatalf("the original's section %s is not in the result", s.RunID)
				}
			}
		}
		again, rep2 := Merge(merged, conflict)
		if rep2.Added != 0 || rep2.Mended != 0 || !bytes.Equal(again, merged) {
			t.Fatalf("merging again added %d, mended %d", rep2.Added, rep2.Mended)
		}
		if len(oprobs) > 0 || len(cprobs) > 0 || twice(original) || twice(conflict) {
			return
		}
		if len(probs) > 0 {
			t.Fatalf("Parse(merged) problems %s\n%q", problemsString(probs), merged)
		}
		count := make(map[string]int)
		for _, s := range secs {
			count[s.RunID]++
		}
		for _, s := range append(osecs, csecs...) {
			if s.RunID != "" && count[s.RunID] != 1 {
				t.Fatalf("run %q is %d times in the result", s.RunID, count[s.RunID])
			}
		}
	})
}

// FuzzMergeSections deals three arbitrary replies out to two tie-offs as
// Append writes them: the merge is complete, holds each run once with its
// reply as written, in time order, and does not depend on the direction.
func FuzzMergeSections(f *testing.F) {
	for _, s := range goldenSections() {
		f.Add(s.Body, "x", s.Body, uint8(5), uint8(3))
	}
	f.Add("a", "b", "c", uint8(1), uint8(6))
	f.Add("```\nopen", "<!--", "~~~", uint8(7), uint8(0))
	f.Fuzz(func(t *testing.T, r1, r2, r3 string, inA, inB uint8) {
		in := []Section{
			mkSection(0, strand.Created, "a.md", r1),
			mkSection(1, strand.Modified, "a.md", r2),
			mkSection(2, strand.Modified, "a.md", r3),
		}
		var a, b []byte
		for i, s := range in {
			if inA&(1<<i) != 0 {
				a = appendBytes(t, a, s)
			}
			if inB&(1<<i) != 0 || inA&(1<<i) == 0 {
				b = appendBytes(t, b, s)
			}
		}
		ab, rep := Merge(a, b)
		ba, rep2 := Merge(b, a)
		if !rep.Complete() || !rep2.Complete() {
			t.Fatalf("left out %s / %s", problemsString(rep.LeftOut), problemsString(rep2.LeftOut))
		}
		for _, doc := range [][]byte{ab, ba} {
			secs, probs := Parse(doc)
			if len(probs) > 0 || len(secs) != len(in) {
				t.Fatalf("Parse(merged) = %d sections, %s\n%q", len(secs), problemsString(probs), doc)
			}
			for i := range in {
				if err := sameSection(secs[i], written(in[i])); err != nil {
					t.Fatalf("section %d: %v\n%q", i, err, doc)
				}
			}
		}
	})
}
