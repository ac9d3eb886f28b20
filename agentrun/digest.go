package agentrun

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/knotd/knotd/strand"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Digest reports what an event means for a note: it is the built-in offline
// agent "digest". previous is the content knotd last processed (nil for
// Created); current is the content now (ignored for Deleted, where previous
// is the note's final state). path is the strand's vault-relative path; its
// file name stands in for the title when the note has no heading.
//
// The reply is compact Markdown: one summary line (title, word count and its
// change), then a bold label and a bullet list for each kind of change that
// happened: headings, tasks (done, reopened, added, removed), links (inline,
// reference, autolinks, images, Obsidian wikilinks and embeds) and sections
// whose text was edited. Created lists the new note's outline, open tasks
// and links; Deleted reports the note's final state, open tasks and links.
//
// YAML frontmatter is not part of the note's text. Text echoed from the note
// is escaped and bounded (20 items a list, 80 characters an item), and the
// reply never contains a heading, a task checkbox, a wikilink or HTML, so it
// can sit in a tie-off without adding tasks or backlinks to the vault.
//
// Digest is a pure function: the same arguments always give the same bytes.
// It never panics, whatever the bytes, and is safe for concurrent use.
func Digest(ev strand.EventType, path string, previous, current []byte) string {
	stem := digestStem(path)
	var w digestWriter
	switch ev {
	case strand.Created:
		digestCreated(&w, digestParse(current, stem))
	case strand.Modified:
		digestModified(&w, digestParse(previous, stem), digestParse(current, stem))
	case strand.Deleted:
		digestDeleted(&w, digestParse(previous, stem))
	default:
		cur := digestParse(current, stem)
		w.line("Unknown event " + digestInline(ev.String()) + " on " + digestTitle(cur.title) + ": " + cur.state() + ".")
	}
	return w.String()
}

// Bounds on what a digest echoes from a note.
const (
	digestMaxItems  = 20  // items shown a list before "… and N more"
	digestMaxText   = 80  // characters of heading, task or link text
	digestMaxTarget = 120 // characters of a link target
)

// digestMarkdown is the goldmark parser digest reads notes with: CommonMark
// plus GFM (tables, strikethrough, task lists, linkify) and footnotes, as
// Obsidian renders them. A goldmark parser is safe for concurrent use.
var digestMarkdown = sync.OnceValue(func() parser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.GFM, extension.Footnote)).Parser()
})

// digestNote is what digest knows about one version of a note.
type digestNote struct {
	front    []byte // the raw frontmatter block, nil when there is none
	body     []byte // everything after the frontmatter, with LF line endings
	title    string
	words    int
	sections []digestSection // sections[0] is the text before the first heading
	tasks    []digestTask
	links    []digestLink // distinct targets, in order of first appearance
}

// digestSection is a heading and the text up to the next heading.
type digestSection struct {
	level int    // 1-6; 0 for the text before the first heading
	text  string // the heading's plain text
	words int
	hash  uint64 // FNV-1a of the section's text as a reader sees it, markup aside
}

type digestTask struct {
	text string
	done bool
}

// digestLinkKind says how a link was written. It is part of a link's identity,
// so [[x]] becoming ![[x]] reads as one link removed and one added.
type digestLinkKind byte

const (
	digestLinkURL   digestLinkKind = 'u' // [text](url), [text][ref], <url>, bare URLs
	digestLinkImage digestLinkKind = 'i' // ![alt](url)
	digestLinkWiki  digestLinkKind = 'w' // [[target|alias]]
	digestLinkEmbed digestLinkKind = 'e' // ![[target]]
)

type digestLink struct {
	kind   digestLinkKind
	target string
	text   string // the link text, when it says more than the target
}

func (l digestLink) key() string { return string(rune(l.kind)) + l.target }

// digestParse reads src (nil means an empty note) into a digestNote.
func digestParse(src []byte, stem string) *digestNote {
	n := &digestNote{}
	n.front, n.body = digestFrontmatter(digestNormalize(src))
	doc := digestMarkdown().Parse(text.NewReader(n.body))
	s := &digestScan{note: n, src: n.body, seen: make(map[string]bool), hash: digestFNVOffset}
	n.sections = append(n.sections, digestSection{})
	_ = ast.Walk(doc, s.visit) // the visitor never returns an error
	s.flush()
	s.brk()
	s.endSection()
	n.title = stem
	for _, sec := range n.sections[1:] {
		if sec.text != "" && sec.level == 1 {
			n.title = sec.text
			return n
		}
	}
	for _, sec := range n.sections[1:] {
		if sec.text != "" {
			n.title = sec.text
			break
		}
	}
	return n
}

// digestNormalize drops a UTF-8 byte order mark and turns CRLF and lone CR
// line endings into LF, copying only when there is a CR.
func digestNormalize(src []byte) []byte {
	src = bytes.TrimPrefix(src, []byte("\xef\xbb\xbf"))
	if bytes.IndexByte(src, '\r') < 0 {
		return src
	}
	out := make([]byte, 0, len(src))
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\r' {
			c = '\n'
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
		}
		out = append(out, c)
	}
	return out
}

// digestFrontmatter splits a leading YAML frontmatter block (a "---" line, the
// YAML, then a "---" or "..." line) from the body. Without a closing line
// there is no frontmatter and the whole of src is body.
func digestFrontmatter(src []byte) (front, body []byte) {
	line, rest, ok := bytes.Cut(src, []byte("\n"))
	if !ok || string(bytes.TrimRight(line, " \t")) != "---" {
		return nil, src
	}
	off := len(line) + 1
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		off += len(line) + 1
		if t := string(bytes.TrimRight(line, " \t")); t == "---" || t == "..." {
			off = min(off, len(src))
			return src[:off], src[off:]
		}
	}
	return nil, src
}

// digestStem is the file name of path without its directory and ".md".
func digestStem(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		path = path[i+1:]
	}
	if len(path) > 3 && strings.EqualFold(path[len(path)-3:], ".md") {
		path = path[:len(path)-3]
	}
	if path == "" {
		return "untitled"
	}
	return path
}

// state describes the note as it stands: "245 words, 4 headings, 3 tasks (1
// done), 5 links".
func (n *digestNote) state() string {
	if n.words == 0 && len(n.sections) == 1 && len(n.tasks) == 0 && len(n.links) == 0 {
		return "empty"
	}
	parts := []string{digestCount(n.words, "word", "words")}
	if h := len(n.sections) - 1; h > 0 {
		parts = append(parts, digestCount(h, "heading", "headings"))
	}
	if len(n.tasks) > 0 {
		parts = append(parts, n.taskState())
	}
	if len(n.links) > 0 {
		parts = append(parts, digestCount(len(n.links), "link", "links"))
	}
	return strings.Join(parts, ", ")
}

// taskState is "4 tasks (1 done)".
func (n *digestNote) taskState() string {
	done := 0
	for _, t := range n.tasks {
		if t.done {
			done++
		}
	}
	return digestCount(len(n.tasks), "task", "tasks") + " (" + strconv.Itoa(done) + " done)"
}

func digestCount(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// digestWordDelta formats a change in words: "+1 word", "−3 words".
func digestWordDelta(d int) string {
	if d == 1 || d == -1 {
		return digestDelta(d) + " word"
	}
	return digestDelta(d) + " words"
}

// digestDelta formats a change in a count: "+9", "−3" or "±0".
func digestDelta(d int) string {
	switch {
	case d > 0:
		return "+" + strconv.Itoa(d)
	case d < 0:
		return "−" + strconv.Itoa(-d)
	}
	return "±0"
}

// digestScan walks one parsed note and fills in its digestNote: words per
// section, headings, tasks and links. Word counting runs across inline nodes
// ("foo*bar*" is one word) and breaks at whitespace and block boundaries.
type digestScan struct {
	note   *digestNote
	src    []byte
	seen   map[string]bool // link keys already recorded
	inWord bool
	alnum  bool   // the current word has a letter or digit
	inLink int    // depth of Link nodes: their text holds no wikilinks
	words  int    // words in the section being read
	hash   uint64 // hash of the section being read

	// run is the last of a run of adjacent Text siblings, contiguous in src
	// from runStart to runEnd; flush scans it for wikilinks and embeds.
	run      *ast.Text
	runStart int
	runEnd   int
}

func (s *digestScan) visit(n ast.Node, entering bool) (ast.WalkStatus, error) {
	if n.Type() != ast.TypeInline {
		s.flush()
		s.brk()
	} else if _, ok := n.(*ast.Text); !ok {
		s.flush()
	}
	if !entering {
		if _, ok := n.(*ast.Link); ok {
			s.inLink--
		}
		return ast.WalkContinue, nil
	}
	switch n := n.(type) {
	case *ast.Heading:
		s.heading(n)
	case *ast.ListItem:
		s.task(n)
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		lines := n.Lines()
		for i := range lines.Len() {
			seg := lines.At(i)
			s.feed(s.src[seg.Start:seg.Stop])
			s.brk()
		}
		return ast.WalkSkipChildren, nil
	case *ast.HTMLBlock, *ast.RawHTML, *extast.TaskCheckBox, *extast.FootnoteLink, *extast.FootnoteBacklink:
		return ast.WalkSkipChildren, nil
	case *ast.Text:
		s.text(n)
	case *ast.String:
		s.feed(n.Value)
	case *ast.CodeSpan:
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				s.feed(s.src[t.Segment.Start:t.Segment.Stop])
			}
		}
		return ast.WalkSkipChildren, nil
	case *ast.AutoLink:
		label := n.Label(s.src)
		s.feed(label)
		s.link(digestLinkURL, string(n.URL(s.src)), "")
	case *ast.Link:
		s.inLink++
		s.link(digestLinkURL, string(n.Destination), digestPlain(n, s.src))
	case *ast.Image:
		s.link(digestLinkImage, string(n.Destination), "")
		return ast.WalkSkipChildren, nil // alt text is not part of the prose
	}
	return ast.WalkContinue, nil
}

// heading starts a new section at h.
func (s *digestScan) heading(h *ast.Heading) {
	s.endSection()
	s.note.sections = append(s.note.sections, digestSection{level: h.Level, text: digestPlain(h, s.src)})
}

// task records li when it is a task list item.
func (s *digestScan) task(li *ast.ListItem) {
	first := li.FirstChild()
	if first == nil {
		return
	}
	if cb, ok := first.FirstChild().(*extast.TaskCheckBox); ok {
		s.note.tasks = append(s.note.tasks, digestTask{text: digestPlain(first, s.src), done: cb.IsChecked})
	}
}

// text counts t's words and extends the run of text scanned for wikilinks.
func (s *digestScan) text(t *ast.Text) {
	s.feed(s.src[t.Segment.Start:t.Segment.Stop])
	breaks := t.SoftLineBreak() || t.HardLineBreak()
	if breaks {
		s.brk()
	}
	if s.inLink > 0 || t.IsRaw() {
		s.flush()
		return
	}
	if s.run == nil || t.PreviousSibling() != s.run || t.Segment.Start != s.runEnd {
		s.flush()
		s.runStart = t.Segment.Start
	}
	s.run, s.runEnd = t, t.Segment.Stop
	if breaks {
		s.flush() // wikilinks do not span lines
	}
}

// flush scans the pending run of text for [[wikilinks]] and ![[embeds]]. A
// backslash escapes the bracket after it; targets hold no brackets or
// newlines; "|alias" is not part of the target. The scan is linear in the
// length of the run, whatever brackets it holds.
func (s *digestScan) flush() {
	if s.run == nil {
		return
	}
	b := s.src[s.runStart:s.runEnd]
	s.run = nil
	for i := 0; i < len(b); {
		j := bytes.Index(b[i:], []byte("[["))
		if j < 0 {
			return
		}
		j += i
		if digestEscaped(b, j) {
			i = j + 1
			continue
		}
		e := bytes.Index(b[j+2:], []byte("]]"))
		if e < 0 {
			return // no later "[[" can close either
		}
		e += j + 2
		inner := b[j+2 : e]
		if k := bytes.LastIndexAny(inner, "[]"); k >= 0 {
			// Only a "[[" ending at the last bracket can still close at e.
			i = j + 2 + k - 1
			continue
		}
		kind := digestLinkWiki
		if j > 0 && b[j-1] == '!' && !digestEscaped(b, j-1) {
			kind = digestLinkEmbed
		}
		target, _, _ := bytes.Cut(inner, []byte("|"))
		s.link(kind, string(target), "")
		i = e + 2
	}
}

// digestEscaped reports whether b[i] follows an odd number of backslashes.
func digestEscaped(b []byte, i int) bool {
	n := 0
	for i > 0 && b[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

// link records a link the first time its kind and target are seen.
func (s *digestScan) link(kind digestLinkKind, target, text string) {
	target = strings.TrimSpace(target)
	if target == "" {
		return
	}
	l := digestLink{kind: kind, target: target}
	if text != target {
		l.text = text
	}
	k := l.key()
	if s.seen[k] {
		return
	}
	s.seen[k] = true
	s.note.links = append(s.note.links, l)
}

// FNV-1a, 64 bits: the hash of a section's text.
const (
	digestFNVOffset = 14695981039346656037
	digestFNVPrime  = 1099511628211
)

// feed counts the words in b and adds b to the section's hash. A word is a
// run of non-space characters with a letter or digit in it; each Han,
// Hiragana or Katakana character counts as a word of its own, as those
// scripts do not separate words with spaces.
func (s *digestScan) feed(b []byte) {
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		char := b[i : i+size]
		i += size
		cjk := false
		switch {
		case r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f' || r >= utf8.RuneSelf && unicode.IsSpace(r):
			s.brk()
			continue
		case r < utf8.RuneSelf:
			s.alnum = s.alnum || 'a' <= r|0x20 && r|0x20 <= 'z' || '0' <= r && r <= '9'
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
			s.brk()
			s.alnum, cjk = true, true
		default:
			s.alnum = s.alnum || unicode.IsLetter(r) || unicode.IsNumber(r)
		}
		s.inWord = true
		for _, c := range char {
			s.hash = (s.hash ^ uint64(c)) * digestFNVPrime
		}
		if cjk {
			s.brk()
		}
	}
}

// brk ends the current word.
func (s *digestScan) brk() {
	if s.inWord {
		s.hash = (s.hash ^ ' ') * digestFNVPrime
		if s.alnum {
			s.count()
		}
	}
	s.inWord, s.alnum = false, false
}

func (s *digestScan) count() {
	s.note.words++
	s.words++
}

// endSection stores the words and hash of the section being read.
func (s *digestScan) endSection() {
	sec := &s.note.sections[len(s.note.sections)-1]
	sec.words, sec.hash = s.words, s.hash
	s.words, s.hash = 0, digestFNVOffset
}

// digestPlain is the plain text of n's inline content, as a reader sees it:
// escapes and entities resolved, markup and raw HTML dropped, whitespace
// collapsed.
func digestPlain(n ast.Node, src []byte) string {
	return digestClean(string(digestPlainAppend(nil, n, src)), -1)
}

func digestPlainAppend(b []byte, n ast.Node, src []byte) []byte {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := src[c.Segment.Start:c.Segment.Stop]
			if c.IsRaw() {
				b = append(b, v...)
			} else {
				b = digestUnescape(b, v)
			}
			if c.SoftLineBreak() || c.HardLineBreak() {
				b = append(b, ' ')
			}
		case *ast.String:
			b = append(b, c.Value...)
		case *ast.AutoLink:
			b = append(b, c.Label(src)...)
		case *ast.RawHTML, *extast.TaskCheckBox, *extast.FootnoteLink, *extast.FootnoteBacklink:
		default:
			b = digestPlainAppend(b, c, src)
		}
	}
	return b
}

// digestUnescape appends v to b with backslash escapes and entity and
// numeric character references resolved, in one pass as CommonMark reads
// them: `\&amp;` reads as "&amp;", not "&".
func digestUnescape(b, v []byte) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case util.IsEscapedPunctuation(v, i):
			b = append(b, v[i+1])
			i++
		case c == '&':
			end := bytes.IndexByte(v[i:min(len(v), i+40)], ';')
			if end < 0 {
				b = append(b, c)
				break
			}
			ref := v[i : i+end+1]
			res := util.ResolveEntityNames(util.ResolveNumericReferences(ref))
			if bytes.Equal(res, ref) {
				b = append(b, c)
				break
			}
			b = append(b, res...)
			i += end
		default:
			b = append(b, c)
		}
	}
	return b
}

// digestCreated describes a new note: its state, outline, open tasks and links.
func digestCreated(w *digestWriter, cur *digestNote) {
	w.line("New note " + digestTitle(cur.title) + ": " + cur.state() + ".")
	heads := cur.sections[1:]
	w.list("Outline", len(heads), func(i int) string { return digestHeadingItem(heads[i], true) })
	open := digestOpen(cur.tasks)
	w.list("Open tasks", len(open), func(i int) string { return digestTaskItem(open[i], false) })
	w.list("Links", len(cur.links), func(i int) string { return digestLinkItem(cur.links[i]) })
}

// digestDeleted describes a deleted note's final state: the open tasks
// that went with it and what it linked to.
func digestDeleted(w *digestWriter, prev *digestNote) {
	w.line("Deleted " + digestTitle(prev.title) + ". Final state: " + prev.state() + ".")
	open := digestOpen(prev.tasks)
	w.list("Open tasks", len(open), func(i int) string { return digestTaskItem(open[i], false) })
	w.list("Links", len(prev.links), func(i int) string { return digestLinkItem(prev.links[i]) })
}

// digestModified describes what changed between two versions of a note.
func digestModified(w *digestWriter, prev, cur *digestNote) {
	title := digestTitle(cur.title)
	if prev.title != cur.title {
		title += " (was " + digestTitle(prev.title) + ")"
	}
	switch {
	case bytes.Equal(prev.body, cur.body) && bytes.Equal(prev.front, cur.front):
		w.line(title + ": no change to the note's content.")
		return
	case bytes.Equal(prev.body, cur.body):
		w.line(title + ": only the frontmatter changed.")
		return
	}
	summary := title + ": " + digestCount(cur.words, "word", "words") + " (" + digestDelta(cur.words-prev.words) + ")"
	if len(cur.tasks) > 0 {
		summary += ", " + cur.taskState()
	}
	w.line(summary + ".")

	pm, cm := digestMatch(prev.sections, cur.sections)
	added := digestUnmatched(cur.sections, cm)
	removed := digestUnmatched(prev.sections, pm)
	w.list("Headings added", len(added), func(i int) string { return digestHeadingItem(added[i], true) })
	w.list("Headings removed", len(removed), func(i int) string { return digestHeadingItem(removed[i], true) })

	td := digestDiffTasks(prev.tasks, cur.tasks)
	w.list("Tasks done", len(td.done), func(i int) string { return digestTaskItem(td.done[i], false) })
	w.list("Tasks reopened", len(td.reopened), func(i int) string { return digestTaskItem(td.reopened[i], false) })
	w.list("Tasks added", len(td.added), func(i int) string { return digestTaskItem(td.added[i], true) })
	w.list("Tasks removed", len(td.removed), func(i int) string { return digestTaskItem(td.removed[i], true) })

	ladd, lrem := digestDiffLinks(prev.links, cur.links)
	w.list("Links added", len(ladd), func(i int) string { return digestLinkItem(ladd[i]) })
	w.list("Links removed", len(lrem), func(i int) string { return digestLinkItem(lrem[i]) })

	var edited [][2]digestSection
	for j, i := range cm {
		if i >= 0 && prev.sections[i].hash != cur.sections[j].hash {
			edited = append(edited, [2]digestSection{prev.sections[i], cur.sections[j]})
		}
	}
	w.list("Edited sections", len(edited), func(i int) string {
		p, c := edited[i][0], edited[i][1]
		name := "*top of note*"
		if c.level > 0 {
			name = digestHeadingItem(c, false)
		}
		return name + ": " + digestWordDelta(c.words-p.words)
	})
	if w.lists == 0 {
		w.line("Only formatting or markup changed; the text reads the same.")
	}
}

// digestMatch pairs sections of two versions by heading level and text: the
// k-th section with a given heading in prev pairs with the k-th one in cur.
// The text before the first heading always pairs. It returns, for each
// section, the index of its partner or -1.
func digestMatch(prev, cur []digestSection) (pm, cm []int) {
	key := func(s digestSection) string { return strconv.Itoa(s.level) + " " + s.text }
	byKey := make(map[string][]int, len(prev))
	for i, s := range prev[1:] {
		byKey[key(s)] = append(byKey[key(s)], i+1)
	}
	pm, cm = make([]int, len(prev)), make([]int, len(cur))
	for i := range pm {
		pm[i] = -1
	}
	pm[0], cm[0] = 0, 0
	for j, s := range cur[1:] {
		k := key(s)
		cm[j+1] = -1
		if idx := byKey[k]; len(idx) > 0 {
			cm[j+1], pm[idx[0]] = idx[0], j+1
			byKey[k] = idx[1:]
		}
	}
	return pm, cm
}

// digestUnmatched lists the headed sections that have no partner.
func digestUnmatched(secs []digestSection, match []int) []digestSection {
	var out []digestSection
	for i, s := range secs[1:] {
		if match[i+1] < 0 {
			out = append(out, s)
		}
	}
	return out
}

type digestTaskDiff struct {
	done, reopened, added, removed []digestTask
}

// digestDiffTasks compares tasks by text. For each text, tasks that kept
// their state pair first, then open ones that became done (done) and done
// ones that became open (reopened); the rest were added or removed. Lists
// follow the order in which texts first appear in cur, then in prev.
func digestDiffTasks(prev, cur []digestTask) digestTaskDiff {
	type tally struct{ prevOpen, prevDone, curOpen, curDone int }
	tallies := make(map[string]*tally)
	var order []string
	get := func(text string) *tally {
		t := tallies[text]
		if t == nil {
			t = &tally{}
			tallies[text] = t
			order = append(order, text)
		}
		return t
	}
	for _, t := range cur {
		if tl := get(t.text); t.done {
			tl.curDone++
		} else {
			tl.curOpen++
		}
	}
	for _, t := range prev {
		if tl := get(t.text); t.done {
			tl.prevDone++
		} else {
			tl.prevOpen++
		}
	}
	var d digestTaskDiff
	repeat := func(list []digestTask, n int, t digestTask) []digestTask {
		for range n {
			list = append(list, t)
		}
		return list
	}
	for _, text := range order {
		t := tallies[text]
		same := min(t.prevOpen, t.curOpen)
		t.prevOpen, t.curOpen = t.prevOpen-same, t.curOpen-same
		same = min(t.prevDone, t.curDone)
		t.prevDone, t.curDone = t.prevDone-same, t.curDone-same
		checked := min(t.prevOpen, t.curDone)
		t.prevOpen, t.curDone = t.prevOpen-checked, t.curDone-checked
		unchecked := min(t.prevDone, t.curOpen)
		t.prevDone, t.curOpen = t.prevDone-unchecked, t.curOpen-unchecked
		open, done := digestTask{text: text}, digestTask{text: text, done: true}
		d.done = repeat(d.done, checked, done)
		d.reopened = repeat(d.reopened, unchecked, open)
		d.added = repeat(repeat(d.added, t.curOpen, open), t.curDone, done)
		d.removed = repeat(repeat(d.removed, t.prevOpen, open), t.prevDone, done)
	}
	return d
}

// digestDiffLinks lists the link targets only cur has and those only prev had.
func digestDiffLinks(prev, cur []digestLink) (added, removed []digestLink) {
	in := func(links []digestLink) map[string]bool {
		m := make(map[string]bool, len(links))
		for _, l := range links {
			m[l.key()] = true
		}
		return m
	}
	inPrev, inCur := in(prev), in(cur)
	for _, l := range cur {
		if !inPrev[l.key()] {
			added = append(added, l)
		}
	}
	for _, l := range prev {
		if !inCur[l.key()] {
			removed = append(removed, l)
		}
	}
	return added, removed
}

func digestOpen(tasks []digestTask) []digestTask {
	var open []digestTask
	for _, t := range tasks {
		if !t.done {
			open = append(open, t)
		}
	}
	return open
}

// digestTitle shows a note's title in bold.
func digestTitle(title string) string {
	t := digestInline(title)
	if t == "" {
		t = "untitled"
	}
	return "**" + t + "**"
}

// digestHeadingItem shows a heading as "`##` Text", followed by its
// section's word count " (40 words)" when words is set.
func digestHeadingItem(s digestSection, words bool) string {
	item := digestCode(strings.Repeat("#", s.level)) + " "
	if s.text == "" {
		item += "*(empty heading)*"
	} else {
		item += digestInline(s.text)
	}
	if words {
		item += " (" + digestCount(s.words, "word", "words") + ")"
	}
	return item
}

// digestTaskItem shows a task's text, marked "(done)" when state is asked
// for and the task is done. Task syntax is never echoed, so a tie-off adds
// no tasks to the vault.
func digestTaskItem(t digestTask, state bool) string {
	item := "*(empty task)*"
	if t.text != "" {
		item = digestInline(t.text)
	}
	if state && t.done {
		item += " (done)"
	}
	return item
}

// digestLinkItem shows a link's target in a code span, so a tie-off adds no
// links or backlinks to the vault, followed by its text when that differs.
func digestLinkItem(l digestLink) string {
	var item string
	switch l.kind {
	case digestLinkWiki:
		item = digestCode("[[" + digestClean(l.target, digestMaxTarget) + "]]")
	case digestLinkEmbed:
		item = digestCode("![[" + digestClean(l.target, digestMaxTarget) + "]]")
	case digestLinkImage:
		item = "image " + digestCode(digestClean(l.target, digestMaxTarget))
	default:
		item = digestCode(digestClean(l.target, digestMaxTarget))
	}
	if t := digestInline(l.text); t != "" {
		item += " (" + t + ")"
	}
	return item
}

// digestWriter builds a digest: blocks separated by blank lines.
type digestWriter struct {
	strings.Builder
	lists int // lists written
}

// line adds a paragraph of one line.
func (w *digestWriter) line(s string) {
	if w.Len() > 0 {
		w.WriteByte('\n')
	}
	w.WriteString(s)
	w.WriteByte('\n')
}

// list adds "**label**" and a bullet list of n items, at most digestMaxItems
// of them, then "… and N more". An empty list adds nothing.
func (w *digestWriter) list(label string, n int, item func(i int) string) {
	if n == 0 {
		return
	}
	w.lists++
	w.line("**" + label + "**")
	for i := range min(n, digestMaxItems) {
		w.WriteString("- " + item(i) + "\n")
	}
	if n > digestMaxItems {
		w.WriteString("- … and " + strconv.Itoa(n-digestMaxItems) + " more\n")
	}
}

// digestClean makes s one line of valid UTF-8 fit to echo: invalid bytes
// become U+FFFD, control characters and whitespace runs one space, bidi
// controls are dropped, and the result is trimmed and cut to limit characters
// (limit < 0: no limit) with "…" marking the cut.
func digestClean(s string, limit int) string {
	var b strings.Builder
	b.Grow(min(len(s), 4*limit+4))
	n, space := 0, false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r):
			space = true
			continue
		case r == '\u061c' || r == '\u200e' || r == '\u200f' || '\u202a' <= r && r <= '\u202e' || '\u2066' <= r && r <= '\u2069':
			continue
		}
		if limit >= 0 && n >= limit {
			b.WriteString("…")
			break
		}
		if space && n > 0 {
			b.WriteByte(' ')
			n++
		}
		space = false
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// digestInline cleans s (see digestClean) and escapes it so that it reads as
// the same literal text wherever a digest puts it, at the start of a list
// item included: no emphasis, code, link, wikilink, HTML, entity, heading,
// tag, highlight, math, comment or list marker can come out of it.
func digestInline(s string) string {
	s = digestClean(s, digestMaxText)
	var b strings.Builder
	b.Grow(len(s) + 8)
	// A leading "-", "+" or "1." / "1)" would start a nested list.
	digits := 0
	for digits < len(s) && digits < 10 && '0' <= s[digits] && s[digits] <= '9' {
		digits++
	}
	switch {
	case s != "" && (s[0] == '-' || s[0] == '+'):
		b.WriteByte('\\')
	case digits > 0 && digits < len(s) && (s[digits] == '.' || s[digits] == ')'):
		b.WriteString(s[:digits])
		b.WriteByte('\\')
		s = s[digits:]
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte("\\`*_[]<>#!|~=$&%^", s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// digestCode shows s (already cleaned) as a code span whose fence s cannot
// close.
func digestCode(s string) string {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
