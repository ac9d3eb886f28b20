package tieoff

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
)

// Conflict is something Merge3 could not place: the merged result holds it
// between conflict markers.
type Conflict struct {
	// Msg says what the two sides did.
	Msg string
}

// Conflict markers, as git writes them (7 characters, git's default
// conflict-marker-size).
const (
	markerOurs   = "<<<<<<< ours\n"
	markerBase   = "||||||| base\n"
	markerSplit  = "=======\n"
	markerTheirs = ">>>>>>> theirs\n"
)

// Merge3 merges two versions of a tie-off, ours and theirs, made from base
// (empty when there is none): git's three-way merge of a file, done by run
// id. It returns the result and what it could not place.
//
// Every section is known by its run id; one without (a hand-written
// section, broken headers, a second section of the same run) by its text.
// A section that only one side added is in the result; the sections
// theirs added go among ours by time (Timestamp, then run id) as Merge
// places them, so each run is in the result once, in time order, when
// both sides are. A section base had is three-way merged: one side's
// change (a hand edit, a torn write mended) wins over the other's
// keeping it as base had it, and one side's removal (a replace-mode
// tie-off keeps only the newest section) removes it if the other kept it
// unchanged. Text before the first section is merged the same way, as
// one piece. Line endings and blanks at the end of a section do not
// count.
//
// What it cannot place is a conflict: both sides changed a section
// differently (or one changed it and the other removed it), both added
// the same run with different text, theirs added something Merge cannot
// place (a section with problems, broken headers), both changed the text
// before the first section, or a side is not a tie-off at all (text
// without a single section). The result then holds, where ours has the
// section (or at the end, or for the text before the first section, at
// the top), git's conflict markers around ours, base's version if there
// is one, and theirs: every word of both sides is in the result.
func Merge3(base, ours, theirs []byte) ([]byte, []Conflict) {
	switch {
	case bytes.Equal(ours, theirs), bytes.Equal(theirs, base):
		return ours, nil
	case bytes.Equal(ours, base):
		return theirs, nil
	}
	o, a, b := parseDoc(base), parseDoc(ours), parseDoc(theirs)
	for _, p := range []*parse{o, a, b} {
		if len(p.chunks) == 0 && len(bytes.TrimSpace(p.x.src[p.base:])) > 0 {
			var out []byte
			out = appendConflict(out, ours, base, true, theirs)
			return out, []Conflict{{Msg: "a side is not a tie-off (no section in it): the whole file is left as a conflict"}}
		}
	}
	m := &merge3{o: o, a: a, b: b, oi: index(o), ai: index(a)}
	return m.run()
}

// merge3 is one Merge3: base (o), ours (a) and theirs (b), and what it
// decided.
type merge3 struct {
	o, a, b    *parse
	oi, ai     map[string]int // key -> chunk
	conflicts  []Conflict
	wraps      []wrap         // conflicts at a section of the result (by key)
	atEnd      [][]byte       // conflict blocks for the end of the result
	drop       map[int]bool   // chunks of ours that theirs removed
	replace    map[int][]byte // chunks of ours that theirs changed -> theirs' text
	preamble   []byte         // ours' text before the first section, or theirs'
	topClash   bool           // both changed the text before the first section
	oPre, bPre []byte         // base's and theirs' text before the first section
}

// wrap is a conflict at a section of the result: ours' text there is put
// between markers with base's (if hasBase) and theirs'.
type wrap struct {
	key          string
	base, theirs []byte
	hasBase      bool
}

// keyOfChunk is how Merge3 knows chunk i of p: its run id, or for a
// section without one (or with broken headers) its text.
func keyOfChunk(p *parse, i int) string {
	if c := p.chunks[i]; c.sec >= 0 {
		if id := p.secs[c.sec].RunID; id != "" {
			return id
		}
	}
	return "\x00" + string(normText(p.x.src[p.chunks[i].start:p.chunks[i].end]))
}

// index maps each key of p to its first chunk; a later chunk of the same
// run id is known by its text.
func index(p *parse) map[string]int {
	ix := make(map[string]int, len(p.chunks))
	for i := range p.chunks {
		k := keyOfChunk(p, i)
		if _, dup := ix[k]; dup {
			k = "\x00" + string(normText(p.x.src[p.chunks[i].start:p.chunks[i].end]))
		}
		if _, dup := ix[k]; !dup {
			ix[k] = i
		}
	}
	return ix
}

func (p *parse) chunkRaw(i int) []byte { return p.x.src[p.chunks[i].start:p.chunks[i].end] }

func (p *parse) torn(i int) bool { c := p.chunks[i]; return c.sec >= 0 && p.secs[c.sec].Torn }

func (m *merge3) conflict(format string, args ...any) {
	m.conflicts = append(m.conflicts, Conflict{Msg: fmt.Sprintf(format, args...)})
}

func (m *merge3) run() ([]byte, []Conflict) {
	o, a, b := m.o, m.a, m.b
	bi := index(b)
	m.drop, m.replace = make(map[int]bool), make(map[int][]byte)

	// The text before the first section, as one piece.
	pre := func(p *parse) []byte { return p.x.src[:p.first] }
	pO, pA, pB := normPreamble(pre(o)), normPreamble(pre(a)), normPreamble(pre(b))
	m.preamble = pre(a)
	switch {
	case bytes.Equal(pA, pB), bytes.Equal(pB, pO):
	case bytes.Equal(pA, pO):
		m.preamble = pre(b)
	default:
		m.topClash, m.oPre, m.bPre = true, pre(o), pre(b)
		m.conflict("both sides changed the text before the first section")
	}

	// The sections base had.
	keys := sortedKeys(m.oi, o)
	for _, k := range keys {
		oc := m.oi[k]
		oRaw := o.chunkRaw(oc)
		ac, inA := m.ai[k]
		bc, inB := bi[k]
		name := describe(k)
		switch {
		case inA && inB:
			aRaw, bRaw := a.chunkRaw(ac), b.chunkRaw(bc)
			switch {
			case sameText(aRaw, bRaw), sameText(bRaw, oRaw), holds(aRaw, bRaw, b.torn(bc)):
			case sameText(aRaw, oRaw), holds(bRaw, aRaw, a.torn(ac)):
				m.replace[ac] = bRaw
			default:
				m.wraps = append(m.wraps, wrap{key: k, base: oRaw, hasBase: true, theirs: bRaw})
				m.conflict("%s: both sides changed it", name)
			}
		case inA:
			if sameText(a.chunkRaw(ac), oRaw) {
				m.drop[ac] = true
			} else {
				m.wraps = append(m.wraps, wrap{key: k, base: oRaw, hasBase: true})
				m.conflict("%s: ours changed it, theirs removed it", name)
			}
		case inB:
			if bRaw := b.chunkRaw(bc); !sameText(bRaw, oRaw) {
				m.atEnd = append(m.atEnd, appendConflict(nil, nil, oRaw, true, bRaw))
				m.conflict("%s: ours removed it, theirs changed it", name)
			}
		}
	}

	// What theirs added goes to Merge.
	var adds []byte
	for i := range b.chunks {
		k := keyOfChunk(b, i)
		if bi[k] != i {
			k = "\x00" + string(normText(b.chunkRaw(i)))
		}
		if _, inO := m.oi[k]; inO {
			continue
		}
		if len(adds) > 0 {
			adds = append(adds, closeSection(adds, true)...)
		}
		adds = append(adds, b.chunkRaw(i)...)
	}
	merged, rep := merge(parseDoc(m.ours()), parseDoc(adds), true)
	for _, l := range rep.LeftOut {
		text := []byte(l.Text)
		lp := parseDoc(text)
		if len(lp.chunks) > 0 && lp.chunks[0].sec >= 0 {
			if id := lp.secs[lp.chunks[0].sec].RunID; id != "" && !slices.ContainsFunc(m.wraps, func(w wrap) bool { return w.key == id }) {
				if _, inA := m.ai[id]; inA {
					m.wraps = append(m.wraps, wrap{key: id, theirs: text})
					m.conflict("run %s: both sides added it, with different text", id)
					continue
				}
			}
		}
		m.atEnd = append(m.atEnd, appendConflict(nil, nil, nil, false, text))
		m.conflict("theirs: %s", l.Msg)
	}
	if len(m.conflicts) == 0 {
		return merged, nil
	}
	return m.mark(merged), m.conflicts
}

// sortedKeys returns the keys of ix in the order of p's chunks.
func sortedKeys(ix map[string]int, p *parse) []string {
	keys := make([]string, 0, len(ix))
	for k := range ix {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return ix[keys[i]] < ix[keys[j]] })
	return keys
}

// describe names a section by its key, for a Conflict.
func describe(k string) string {
	if len(k) > 0 && k[0] == 0 {
		return "a section without a run id"
	}
	return "run " + k
}

// ours returns ours with base's sections theirs changed replaced by
// theirs' text, those theirs removed left out, and the text before the
// first section merged.
func (m *merge3) ours() []byte {
	a := m.a
	src := a.x.src
	out := slices.Clip(bytes.Clone(m.preamble))
	var kept []int
	for i := range a.chunks {
		if !m.drop[i] {
			kept = append(kept, i)
		}
	}
	for n, i := range kept {
		raw, replaced := m.replace[i]
		if !replaced {
			raw = a.chunkRaw(i)
		}
		out = append(out, raw...)
		switch {
		case n+1 == len(kept):
		case !replaced && kept[n+1] == i+1:
			out = append(out, src[a.chunks[i].end:a.chunks[i+1].start]...)
		default:
			out = append(out, closeSection(raw, true)...)
		}
	}
	return out
}

// mark puts the conflicts into merged, the result of the merge with ours'
// side of each: at the top, around a section, at the end.
func (m *merge3) mark(merged []byte) []byte {
	p := parseDoc(merged)
	ix := index(p)
	type span struct {
		start, end int
		block      []byte
	}
	var spans []span
	if m.topClash {
		spans = append(spans, span{0, p.first, appendConflict(nil, merged[:p.first], m.oPre, true, m.bPre)})
	}
	for _, w := range m.wraps {
		if i, ok := ix[w.key]; ok {
			c := p.chunks[i]
			spans = append(spans, span{c.start, c.end, appendConflict(nil, merged[c.start:c.end], w.base, w.hasBase, w.theirs)})
		} else { // not expected: ours holds the section; kept all the same
			m.atEnd = append(m.atEnd, appendConflict(nil, nil, w.base, w.hasBase, w.theirs))
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	var out []byte
	last := 0
	for _, s := range spans {
		if s.start < last { // overlapping: cannot happen, keys are unique
			continue
		}
		out = append(out, merged[last:s.start]...)
		out = append(out, s.block...)
		last = s.end
	}
	out = append(out, merged[last:]...)
	for _, blk := range m.atEnd {
		if len(out) > 0 {
			if out[len(out)-1] != '\n' {
				out = append(out, '\n')
			}
			out = append(out, '\n')
		}
		out = append(out, blk...)
	}
	return out
}

// appendConflict appends git's conflict markers around ours, base (if
// hasBase) and theirs to out.
func appendConflict(out, ours, base []byte, hasBase bool, theirs []byte) []byte {
	side := func(b []byte) {
		out = append(out, b...)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	out = append(out, markerOurs...)
	side(ours)
	if hasBase {
		out = append(out, markerBase...)
		side(base)
	}
	out = append(out, markerSplit...)
	side(theirs)
	return append(out, markerTheirs...)
}
