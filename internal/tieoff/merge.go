package tieoff

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/knotd/knotd/internal/vaultfs"
)

// MergeReport says what Merge did with a conflict copy of a tie-off, and
// what of the copy it could not place.
type MergeReport struct {
	// Added is how many sections of the copy were inserted: those whose
	// run id the original does not hold.
	Added int
	// Mended is how many torn sections of the original (see Section.Torn)
	// were replaced by the copy's longer version of the same run.
	Mended int
	// Present is how many sections of the copy the original already holds:
	// the same text, or, for a torn section of the copy, the text it is the
	// start of.
	Present int
	// LeftOut lists what of the copy is not in the merged result, each with
	// its line in the copy, why, and its text: text before the first
	// section that is not the original's, a section without a run id (or
	// with broken headers) that the original does not hold word for word, a
	// run whose text differs from the original's section of that run, and
	// a new section with parse problems (a torn one among them).
	LeftOut []ParseError
	// Removed reports that MergeFile removed the copy: the merge was
	// complete and durable. (When the tie-off did not exist, the copy was
	// linked to its name, then removed under its own.)
	Removed bool
}

// Complete reports whether everything in the copy is in the merged
// result, so that the copy may be removed without losing a word.
func (r MergeReport) Complete() bool { return len(r.LeftOut) == 0 }

// Merge merges conflict, a sync tool's conflict copy of a tie-off, into
// original, the tie-off, by run id: the result is original's bytes, all of
// them, with every section of the copy whose run id original does not hold
// inserted at its place in time order, so that each run is in the result
// once.
//
// A section is placed before the first section of original (in file order)
// that sorts after it by Timestamp, then run id (run ids are UUID v7s,
// which sort by the run's start); sections after all of original's go at
// the end, in that order. Each inserted section keeps its exact bytes as
// they stand in the copy, from its Event header to the end of its body
// (Merge never formats a section again); it is followed by what Append
// would write after it: a final newline if it lacks one, the lines that
// close a block it left open, and the separator. At the end of original,
// sections are added as Append adds them. Text before original's first
// section stays at the top.
//
// When a run is in both, original's section is kept; but if it is torn
// (its body shorter than its marker says, see Section.Torn) and the copy's
// section of that run is the same text, longer, the copy's replaces it.
// (A torn section of original that the copy cannot mend stays as it is;
// if a later section is added after it, it is no longer the last one, and
// Parse and HasRun no longer report it as torn.) Line endings and blanks
// at the end of a section do not count when comparing sections.
//
// Merge never drops a word of original. What of the copy it cannot place
// is listed in the report's LeftOut (see MergeReport), and the copy must
// then be kept. Merging the same copy again adds nothing (Merge is
// idempotent). If both inputs parse without problems and neither holds a
// run twice, the result parses without problems, with every run of both
// once. If moreover nothing is left out either way and both inputs are in
// time order (as knotd writes them), merging A into B and B into A gives
// the same sections in the same order.
func Merge(original, conflict []byte) (merged []byte, report MergeReport) {
	return merge(parseDoc(original), parseDoc(conflict), false)
}

// merge is Merge on parsed inputs. With noID, a section of the copy
// without a run id that the original does not hold is placed by its
// Timestamp like any other (Merge3 gives it only sections the other side
// added), instead of being left out.
func merge(original, conflict *parse, noID bool) ([]byte, MergeReport) {
	m := &merger{o: original, c: conflict, noID: noID}
	m.place()
	return m.build(), m.rep
}

type merger struct {
	o, c *parse
	rep  MergeReport
	noID bool // place sections without a run id (see merge)
	// byID maps a run id to the first chunk of o that holds it.
	byID map[string]int
	// mend maps a torn chunk of o to the text that replaces it.
	mend map[int][]byte
	// adds are the copy's sections to insert, in time order once placed.
	adds  []addition
	added map[string]int // run id -> index in adds
	// known holds the normalised text of every chunk of o, made when
	// first needed.
	known map[string]bool
}

type addition struct {
	raw []byte
	key sectionKey
}

// sectionKey orders sections in time: by Timestamp, then run id.
type sectionKey struct {
	t  time.Time
	id string
}

func keyOf(s Section) sectionKey { return sectionKey{s.Time, s.RunID} }

func (a sectionKey) less(b sectionKey) bool {
	if !a.t.Equal(b.t) {
		return a.t.Before(b.t)
	}
	return a.id < b.id
}

func (m *merger) raw(p *parse, i int) []byte { return p.x.src[p.chunks[i].start:p.chunks[i].end] }

// place decides, for every part of the copy, whether it is present,
// mends a torn section, is added, or is left out.
func (m *merger) place() {
	o, c := m.o, m.c
	m.byID = make(map[string]int)
	for i, ch := range o.chunks {
		if ch.sec < 0 {
			continue
		}
		if id := o.secs[ch.sec].RunID; id != "" {
			if _, dup := m.byID[id]; !dup {
				m.byID[id] = i
			}
		}
	}
	m.mend = make(map[int][]byte)
	m.added = make(map[string]int)

	if pre := normPreamble(c.x.src[:c.first]); len(pre) > 0 && !bytes.Equal(pre, normPreamble(o.x.src[:o.first])) {
		src := c.x.src[:c.first]
		lead := len(src) - len(bytes.TrimLeft(src, " \t\r\n\ufeff"))
		m.leave(c.x.lineOf(lead)+1, "text before the first section is not the original's", src)
	}

	// The number of problems on each chunk's lines.
	probs := make([]int, len(c.chunks))
	for _, pr := range c.probs {
		i := sort.Search(len(c.chunks), func(i int) bool { return c.chunks[i].line > pr.Line }) - 1
		if i >= 0 {
			probs[i]++
		}
	}

	for ci, ch := range c.chunks {
		raw := m.raw(c, ci)
		if ch.sec < 0 {
			if m.inOriginal(raw) {
				m.rep.Present++
			} else {
				m.leave(ch.line, "a section with broken headers is not in the original", raw)
			}
			continue
		}
		s := c.secs[ch.sec]
		oi, inO := m.byID[s.RunID]
		ai, inAdds := m.added[s.RunID]
		switch {
		case s.RunID == "":
			switch {
			case m.inOriginal(raw):
				m.rep.Present++
			case m.noID && probs[ci] == 0:
				m.adds = append(m.adds, addition{raw: raw, key: keyOf(s)})
				m.rep.Added++
			default:
				m.leave(ch.line, "a section without a run id is not in the original", raw)
			}
		case inO:
			cur, mended := m.mend[oi]
			if !mended {
				cur = m.raw(m.o, oi)
			}
			switch {
			case holds(cur, raw, s.Torn):
				m.rep.Present++
			case !mended && o.secs[o.chunks[oi].sec].Torn && startsText(raw, cur) &&
				(probs[ci] == 0 || s.Torn && probs[ci] == 1):
				m.mend[oi] = raw
				m.rep.Mended++
			default:
				m.leave(ch.line, fmt.Sprintf("run %s: the copy's section differs from the original's", s.RunID), raw)
			}
		case inAdds:
			if holds(m.adds[ai].raw, raw, s.Torn) {
				m.rep.Present++
			} else {
				m.leave(ch.line, fmt.Sprintf("run %s is twice in the copy, with different text", s.RunID), raw)
			}
		case probs[ci] > 0:
			m.leave(ch.line, fmt.Sprintf("run %s: a section with problems (%s) is not merged", s.RunID, m.firstProblem(ch, ci)), raw)
		default:
			m.added[s.RunID] = len(m.adds)
			m.adds = append(m.adds, addition{raw: raw, key: keyOf(s)})
			m.rep.Added++
		}
	}
	sort.SliceStable(m.adds, func(i, j int) bool { return m.adds[i].key.less(m.adds[j].key) })
}

// firstProblem returns the message of the first problem on the lines of
// the copy's chunk ci.
func (m *merger) firstProblem(ch chunk, ci int) string {
	end := int(^uint(0) >> 1)
	if ci+1 < len(m.c.chunks) {
		end = m.c.chunks[ci+1].line
	}
	for _, p := range m.c.probs {
		if p.Line >= ch.line && p.Line < end {
			return p.Msg
		}
	}
	return ""
}

func (m *merger) leave(line int, msg string, text []byte) {
	m.rep.LeftOut = append(m.rep.LeftOut, ParseError{Line: line, Msg: msg, Text: string(text)})
}

// inOriginal reports whether some chunk of the original has the text raw.
func (m *merger) inOriginal(raw []byte) bool {
	if m.known == nil {
		m.known = make(map[string]bool, len(m.o.chunks))
		for i := range m.o.chunks {
			m.known[string(normText(m.raw(m.o, i)))] = true
		}
	}
	return m.known[string(normText(raw))]
}

// build writes the original with the additions and mends in place.
func (m *merger) build() []byte {
	src := m.o.x.src
	out := make([]byte, 0, len(src)+len(m.c.x.src)/2)
	last, next := 0, 0
	for i, ch := range m.o.chunks {
		if ch.sec < 0 {
			continue
		}
		k := keyOf(m.o.secs[ch.sec])
		j := next
		for j < len(m.adds) && m.adds[j].key.less(k) {
			j++
		}
		mend, mended := m.mend[i]
		if j == next && !mended {
			continue
		}
		out = append(out, src[last:ch.start]...)
		for _, a := range m.adds[next:j] {
			out = append(out, a.raw...)
			out = append(out, closeSection(a.raw, true)...)
		}
		next, last = j, ch.start
		if mended {
			out = append(out, mend...)
			last = ch.end
		}
	}
	out = append(out, src[last:]...)
	for _, a := range m.adds[next:] {
		j, err := joint(bytes.NewReader(out), int64(len(out)))
		if err != nil && len(out) > 0 { // a bytes.Reader does not fail; be safe all the same
			j = closeSection(out, false)
		}
		out = append(out, j...)
		out = append(out, a.raw...)
	}
	return out
}

// normText is a chunk's text as Merge compares it: CRLF read as LF, and
// no blanks or line endings at the end.
func normText(b []byte) []byte {
	if bytes.Contains(b, []byte("\r\n")) {
		b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	}
	return bytes.TrimRight(b, " \t\r\n")
}

// normPreamble is the text before the first section as Merge compares it:
// without a byte order mark and blanks at either end.
func normPreamble(b []byte) []byte {
	b = bytes.TrimPrefix(b, []byte(bom))
	return bytes.TrimSpace(normText(b))
}

func sameText(a, b []byte) bool { return bytes.Equal(normText(a), normText(b)) }

// holds reports whether cur, a section's text in the result, holds every
// word of raw, the text of the same run in the copy: the same text; or
// the same once the lines that close a block raw left open at its end are
// added (as Merge and Append add them); or, if raw is torn, the text it is
// the start of.
func holds(cur, raw []byte, torn bool) bool {
	if sameText(cur, raw) || torn && startsText(cur, raw) {
		return true
	}
	if !bytes.HasPrefix(normText(cur), normText(raw)) {
		return false
	}
	j := closeSection(raw, true)
	return sameText(cur, append(slices.Clip(raw), j[:len(j)-len(separator)]...))
}

// startsText reports whether the text of whole starts with that of part.
func startsText(whole, part []byte) bool { return bytes.HasPrefix(normText(whole), normText(part)) }

// errChanged is wrapped by MergeFile's error when the tie-off or its
// conflict copy changed while MergeFile merged them (a sync tool or an
// editor wrote it): what changed is left as it is, nothing is lost, and
// merging again finishes the work.
var errChanged = errors.New("tieoff: the file changed while it was being merged")

// MergeFile merges copyName, a sync tool's conflict copy of the tie-off
// name (see ConflictOf), into that tie-off, both slash-separated names
// relative to root, and removes the copy once nothing of it is left out.
//
// It reads both files under the rules of Read (inside the vault, no
// symbolic link at either name, regular files only, a FIFO refused without
// blocking, at most maxReadSize bytes each), merges them with Merge, and,
// if that changes the tie-off, writes the result with vaultfs.Replace: a
// temporary file, synced, renamed over the tie-off (which keeps its
// permissions), and the directory synced. A hard-linked tie-off is thus
// replaced, not written through: its other names keep the old content.
// Only when the report says nothing of the copy was left out, and the
// durable write is done, is the copy removed and its directory synced;
// the report then says Removed. A merged tie-off larger than maxReadSize
// is not written (ErrTooLarge). If either file changed since it was read,
// MergeFile stops with an error wrapping errChanged.
//
// If the tie-off does not exist, the copy simply becomes it: it is linked
// to name (which fails, and the merge is done instead, if a tie-off
// appeared meanwhile: a rename would replace that one), its own name is
// removed, and the directory synced. On a file system without hard links
// it is renamed to name instead.
//
// The caller must make sure that nobody appends to the tie-off while
// MergeFile runs (knotd merges from the same place where it appends).
func MergeFile(root *os.Root, name, copyName string) (report MergeReport, err error) {
	fail := func(err error) (MergeReport, error) {
		return report, fmt.Errorf("tieoff: merge %s into %s: %w", copyName, name, err)
	}
	if path.Clean(name) == path.Clean(copyName) {
		return fail(errors.New("the copy is the tie-off itself"))
	}
	cdata, cfi, err := vaultfs.ReadFile(root, copyName, maxReadSize)
	if err != nil {
		return fail(err)
	}
	odata, ofi, err := vaultfs.ReadFile(root, name, maxReadSize)
	if errors.Is(err, fs.ErrNotExist) {
		// The copy becomes the tie-off: linked to its name, which fails if
		// a tie-off appeared meanwhile (a rename would replace it), then
		// removed under its own name.
		switch err := root.Link(filepath.FromSlash(copyName), filepath.FromSlash(name)); {
		case errors.Is(err, fs.ErrExist):
			return MergeFile(root, name, copyName)
		case err != nil:
			// No hard links here (FAT, some network and FUSE file
			// systems): a rename, which the appearing tie-off's race
			// remains open for.
			if err := root.Rename(filepath.FromSlash(copyName), filepath.FromSlash(name)); err != nil {
				return fail(err)
			}
		default:
			if err := root.Remove(filepath.FromSlash(copyName)); err != nil {
				return fail(fmt.Errorf("the copy is the tie-off now, but removing its old name: %w", err))
			}
		}
		secs, _ := Parse(cdata)
		report.Added, report.Removed = len(secs), true
		if err := syncDirs(root, name, copyName); err != nil {
			return fail(fmt.Errorf("the copy is the tie-off now, but: %w", err))
		}
		return report, nil
	}
	if err != nil {
		return fail(err)
	}
	var merged []byte
	merged, report = Merge(odata, cdata)
	if len(merged) > maxReadSize {
		return fail(fmt.Errorf("%w: the merged tie-off would be %d bytes; nothing is written", ErrTooLarge, len(merged)))
	}
	if !bytes.Equal(merged, odata) {
		check := func() error { return unchanged(root, name, ofi) }
		if err := vaultfs.Replace(root, name, merged, vaultfs.ReplaceOptions{Check: check}); err != nil {
			return fail(err)
		}
	}
	if !report.Complete() {
		return report, nil
	}
	if err := unchanged(root, copyName, cfi); err != nil {
		return fail(err)
	}
	if err := root.Remove(filepath.FromSlash(copyName)); err != nil {
		return fail(err)
	}
	report.Removed = true
	if err := vaultfs.SyncDir(root, path.Dir(copyName)); err != nil {
		return fail(fmt.Errorf("the copy is removed, but: %w", err))
	}
	return report, nil
}

// unchanged reports, as an error wrapping errChanged, whether the file at
// name is no longer the one described by was, or has another size or
// modification time.
func unchanged(root *os.Root, name string, was fs.FileInfo) error {
	now, err := root.Lstat(filepath.FromSlash(name))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errChanged, name, err)
	}
	if !os.SameFile(was, now) || now.Size() != was.Size() || !now.ModTime().Equal(was.ModTime()) {
		return fmt.Errorf("%w: %s", errChanged, name)
	}
	return nil
}

// syncDirs syncs the directories of the given names, each once.
func syncDirs(root *os.Root, names ...string) error {
	done := make(map[string]bool)
	for _, n := range names {
		d := path.Dir(n)
		if done[d] {
			continue
		}
		done[d] = true
		if err := vaultfs.SyncDir(root, d); err != nil {
			return err
		}
	}
	return nil
}
