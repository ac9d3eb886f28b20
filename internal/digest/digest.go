package digest

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/strand"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Of reports what an event means for a note: it is the built-in offline
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
// Of is a pure function: the same arguments always give the same bytes.
// It never panics, whatever the bytes, and is safe for concurrent use.
func Of(ev strand.EventType, path string, previous, current []byte) string {
	stem := stemOf(path)
	var w writer
	switch ev {
	case strand.Created:
		created(&w, parse(current, stem))
	case strand.Modified:
		modified(&w, parse(previous, stem), parse(current, stem))
	case strand.Deleted:
		deleted(&w, parse(previous, stem))
	default:
		cur := parse(current, stem)
		w.line("Unknown event " + inlineText(ev.String()) + " on " + titleText(cur.title) + ": " + cur.state() + ".")
	}
	return w.String()
}

// Bounds on what a digest echoes from a note.
const (
	maxItems  = 20  // items shown a list before "… and N more"
	maxText   = 80  // characters of heading, task or link text
	maxTarget = 120 // characters of a link target
)

// markdown is the goldmark parser digest reads notes with: CommonMark
// plus GFM (tables, strikethrough, task lists, linkify) and footnotes, as
// Obsidian renders them. A goldmark parser is safe for concurrent use.
var markdown = sync.OnceValue(func() parser.Parser {
	return goldmark.New(goldmark.WithExtensions(extension.GFM, extension.Footnote)).Parser()
})

// note is what digest knows about one version of a note.
type note struct {
	front    []byte // the raw frontmatter block, nil when there is none
	body     []byte // everything after the frontmatter, with LF line endings
	title    string
	words    int
	sections []section // sections[0] is the text before the first heading
	tasks    []task
	links    []link // distinct targets, in order of first appearance
}

// section is a heading and the text up to the next heading.
type section struct {
	level int    // 1-6; 0 for the text before the first heading
	text  string // the heading's plain text
	words int
	hash  uint64 // FNV-1a of the section's text as a reader sees it, markup aside
}

type task struct {
	text string
	done bool
}

// linkKind says how a link was written. It is part of a link's identity,
// so [[x]] becoming ![[x]] reads as one link removed and one added.
type linkKind byte

const (
	linkURL   linkKind = 'u' // [text](url), [text][ref], <url>, bare URLs
	linkImage linkKind = 'i' // ![alt](url)
	linkWiki  linkKind = 'w' // [[target|alias]]
	linkEmbed linkKind = 'e' // ![[target]]
)

type link struct {
	kind   linkKind
	target string
	text   string // the link text, when it says more than the target
}

func (l link) key() string { return string(rune(l.kind)) + l.target }

// parse reads src (nil means an empty note) into a note.
func parse(src []byte, stem string) *note {
	n := &note{}
	n.front, n.body = splitFrontmatter(normalize(src))
	doc := markdown().Parse(text.NewReader(n.body))
	s := &scan{note: n, src: n.body, seen: make(map[string]bool), hash: fNVOffset}
	n.sections = append(n.sections, section{})
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

// normalize drops a UTF-8 byte order mark and turns CRLF and lone CR
// line endings into LF, copying only when there is a CR.
func normalize(src []byte) []byte {
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

// splitFrontmatter splits a leading YAML frontmatter block (a "---" line, the
// YAML, then a "---" or "..." line) from the body. Without a closing line
// there is no frontmatter and the whole of src is body.
func splitFrontmatter(src []byte) (front, body []byte) {
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

// stemOf is the file name of path without its directory and ".md".
func stemOf(path string) string {
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
func (n *note) state() string {
	if n.words == 0 && len(n.sections) == 1 && len(n.tasks) == 0 && len(n.links) == 0 {
		return "empty"
	}
	parts := []string{plural(n.words, "word", "words")}
	if h := len(n.sections) - 1; h > 0 {
		parts = append(parts, plural(h, "heading", "headings"))
	}
	if len(n.tasks) > 0 {
		parts = append(parts, n.taskState())
	}
	if len(n.links) > 0 {
		parts = append(parts, plural(len(n.links), "link", "links"))
	}
	return strings.Join(parts, ", ")
}

// taskState is "4 tasks (1 done)".
func (n *note) taskState() string {
	done := 0
	for _, t := range n.tasks {
		if t.done {
			done++
		}
	}
	return plural(len(n.tasks), "task", "tasks") + " (" + strconv.Itoa(done) + " done)"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// wordDelta formats a change in words: "+1 word", "−3 words".
func wordDelta(d int) string {
	if d == 1 || d == -1 {
		return delta(d) + " word"
	}
	return delta(d) + " words"
}

// delta formats a change in a count: "+9", "−3" or "±0".
func delta(d int) string {
	switch {
	case d > 0:
		return "+" + strconv.Itoa(d)
	case d < 0:
		return "−" + strconv.Itoa(-d)
	}
	return "±0"
}

// scan walks one parsed note and fills in its note: words per
// section, headings, tasks and links. Word counting runs across inline nodes
// ("foo*bar*" is one word) and breaks at whitespace and block boundaries.
type scan struct {
	note   *note
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

func (s *scan) visit(n ast.Node, entering bool) (ast.WalkStatus, error) {
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
		s.link(linkURL, string(n.URL(s.src)), "")
	case *ast.Link:
		s.inLink++
		s.link(linkURL, string(n.Destination), plainText(n, s.src))
	case *ast.Image:
		s.link(linkImage, string(n.Destination), "")
		return ast.WalkSkipChildren, nil // alt text is not part of the prose
	}
	return ast.WalkContinue, nil
}

// heading starts a new section at h.
func (s *scan) heading(h *ast.Heading) {
	s.endSection()
	s.note.sections = append(s.note.sections, section{level: h.Level, text: plainText(h, s.src)})
}

// task records li when it is a task list item.
func (s *scan) task(li *ast.ListItem) {
	first := li.FirstChild()
	if first == nil {
		return
	}
	if cb, ok := first.FirstChild().(*extast.TaskCheckBox); ok {
		s.note.tasks = append(s.note.tasks, task{text: plainText(first, s.src), done: cb.IsChecked})
	}
}

// text counts t's words and extends the run of text scanned for wikilinks.
func (s *scan) text(t *ast.Text) {
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
func (s *scan) flush() {
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
		if escaped(b, j) {
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
		kind := linkWiki
		if j > 0 && b[j-1] == '!' && !escaped(b, j-1) {
			kind = linkEmbed
		}
		target, _, _ := bytes.Cut(inner, []byte("|"))
		s.link(kind, string(target), "")
		i = e + 2
	}
}

// escaped reports whether b[i] follows an odd number of backslashes.
func escaped(b []byte, i int) bool {
	n := 0
	for i > 0 && b[i-1] == '\\' {
		n++
		i--
	}
	return n%2 == 1
}

// link records a link the first time its kind and target are seen.
func (s *scan) link(kind linkKind, target, text string) {
	target = strings.TrimSpace(target)
	if target == "" {
		return
	}
	l := link{kind: kind, target: target}
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
	fNVOffset = 14695981039346656037
	fNVPrime  = 1099511628211
)

// feed counts the words in b and adds b to the section's hash. A word is a
// run of non-space characters with a letter or digit in it; each Han,
// Hiragana or Katakana character counts as a word of its own, as those
// scripts do not separate words with spaces.
func (s *scan) feed(b []byte) {
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
			s.hash = (s.hash ^ uint64(c)) * fNVPrime
		}
		if cjk {
			s.brk()
		}
	}
}

// brk ends the current word.
func (s *scan) brk() {
	if s.inWord {
		s.hash = (s.hash ^ ' ') * fNVPrime
		if s.alnum {
			s.count()
		}
	}
	s.inWord, s.alnum = false, false
}

func (s *scan) count() {
	s.note.words++
	s.words++
}

// endSection stores the words and hash of the section being read.
func (s *scan) endSection() {
	sec := &s.note.sections[len(s.note.sections)-1]
	sec.words, sec.hash = s.words, s.hash
	s.words, s.hash = 0, fNVOffset
}

// plainText is the plain text of n's inline content, as a reader sees it:
// escapes and entities resolved, markup and raw HTML dropped, whitespace
// collapsed.
func plainText(n ast.Node, src []byte) string {
	return cleanText(string(appendPlain(nil, n, src)), -1)
}

func appendPlain(b []byte, n ast.Node, src []byte) []byte {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			v := src[c.Segment.Start:c.Segment.Stop]
			if c.IsRaw() {
				b = append(b, v...)
			} else {
				b = unescape(b, v)
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
			b = appendPlain(b, c, src)
		}
	}
	return b
}

// unescape appends v to b with backslash escapes and entity and
// numeric character references resolved, in one pass as CommonMark reads
// them: `\&amp;` reads as "&amp;", not "&".
func unescape(b, v []byte) []byte {
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

// created describes a new note: its state, outline, open tasks and links.
func created(w *writer, cur *note) {
	w.line("New note " + titleText(cur.title) + ": " + cur.state() + ".")
	heads := cur.sections[1:]
	w.list("Outline", len(heads), func(i int) string { return headingItem(heads[i], true) })
	open := openTasks(cur.tasks)
	w.list("Open tasks", len(open), func(i int) string { return taskItem(open[i], false) })
	w.list("Links", len(cur.links), func(i int) string { return linkItem(cur.links[i]) })
}

// deleted describes a deleted note's final state: the open tasks
// that went with it and what it linked to.
func deleted(w *writer, prev *note) {
	w.line("Deleted " + titleText(prev.title) + ". Final state: " + prev.state() + ".")
	open := openTasks(prev.tasks)
	w.list("Open tasks", len(open), func(i int) string { return taskItem(open[i], false) })
	w.list("Links", len(prev.links), func(i int) string { return linkItem(prev.links[i]) })
}

// modified describes what changed between two versions of a note.
func modified(w *writer, prev, cur *note) {
	title := titleText(cur.title)
	if prev.title != cur.title {
		title += " (was " + titleText(prev.title) + ")"
	}
	switch {
	case bytes.Equal(prev.body, cur.body) && bytes.Equal(prev.front, cur.front):
		w.line(title + ": no change to the note's content.")
		return
	case bytes.Equal(prev.body, cur.body):
		w.line(title + ": only the frontmatter changed.")
		return
	}
	summary := title + ": " + plural(cur.words, "word", "words") + " (" + delta(cur.words-prev.words) + ")"
	if len(cur.tasks) > 0 {
		summary += ", " + cur.taskState()
	}
	w.line(summary + ".")

	pm, cm := match(prev.sections, cur.sections)
	added := unmatched(cur.sections, cm)
	removed := unmatched(prev.sections, pm)
	w.list("Headings added", len(added), func(i int) string { return headingItem(added[i], true) })
	w.list("Headings removed", len(removed), func(i int) string { return headingItem(removed[i], true) })

	td := diffTasks(prev.tasks, cur.tasks)
	w.list("Tasks done", len(td.done), func(i int) string { return taskItem(td.done[i], false) })
	w.list("Tasks reopened", len(td.reopened), func(i int) string { return taskItem(td.reopened[i], false) })
	w.list("Tasks added", len(td.added), func(i int) string { return taskItem(td.added[i], true) })
	w.list("Tasks removed", len(td.removed), func(i int) string { return taskItem(td.removed[i], true) })

	ladd, lrem := diffLinks(prev.links, cur.links)
	w.list("Links added", len(ladd), func(i int) string { return linkItem(ladd[i]) })
	w.list("Links removed", len(lrem), func(i int) string { return linkItem(lrem[i]) })

	var edited [][2]section
	for j, i := range cm {
		if i >= 0 && prev.sections[i].hash != cur.sections[j].hash {
			edited = append(edited, [2]section{prev.sections[i], cur.sections[j]})
		}
	}
	w.list("Edited sections", len(edited), func(i int) string {
		p, c := edited[i][0], edited[i][1]
		name := "*top of note*"
		if c.level > 0 {
			name = headingItem(c, false)
		}
		return name + ": " + wordDelta(c.words-p.words)
	})
	if w.lists == 0 {
		w.line("Only formatting or markup changed; the text reads the same.")
	}
}

// match pairs sections of two versions by heading level and text: the
// k-th section with a given heading in prev pairs with the k-th one in cur.
// The text before the first heading always pairs. It returns, for each
// section, the index of its partner or -1.
func match(prev, cur []section) (pm, cm []int) {
	key := func(s section) string { return strconv.Itoa(s.level) + " " + s.text }
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

// unmatched lists the headed sections that have no partner.
func unmatched(secs []section, match []int) []section {
	var out []section
	for i, s := range secs[1:] {
		if match[i+1] < 0 {
			out = append(out, s)
		}
	}
	return out
}

type taskDiff struct {
	done, reopened, added, removed []task
}

// diffTasks compares tasks by text. For each text, tasks that kept
// their state pair first, then open ones that became done (done) and done
// ones that became open (reopened); the rest were added or removed. Lists
// follow the order in which texts first appear in cur, then in prev.
func diffTasks(prev, cur []task) taskDiff {
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
	var d taskDiff
	repeat := func(list []task, n int, t task) []task {
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
		open, done := task{text: text}, task{text: text, done: true}
		d.done = repeat(d.done, checked, done)
		d.reopened = repeat(d.reopened, unchecked, open)
		d.added = repeat(repeat(d.added, t.curOpen, open), t.curDone, done)
		d.removed = repeat(repeat(d.removed, t.prevOpen, open), t.prevDone, done)
	}
	return d
}

// diffLinks lists the link targets only cur has and those only prev had.
func diffLinks(prev, cur []link) (added, removed []link) {
	in := func(links []link) map[string]bool {
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

func openTasks(tasks []task) []task {
	var open []task
	for _, t := range tasks {
		if !t.done {
			open = append(open, t)
		}
	}
	return open
}

// titleText shows a note's title in bold.
func titleText(title string) string {
	t := inlineText(title)
	if t == "" {
		t = "untitled"
	}
	return "**" + t + "**"
}

// headingItem shows a heading as "`##` Text", followed by its
// section's word count " (40 words)" when words is set.
func headingItem(s section, words bool) string {
	item := codeSpan(strings.Repeat("#", s.level)) + " "
	if s.text == "" {
		item += "*(empty heading)*"
	} else {
		item += inlineText(s.text)
	}
	if words {
		item += " (" + plural(s.words, "word", "words") + ")"
	}
	return item
}

// taskItem shows a task's text, marked "(done)" when state is asked
// for and the task is done. Task syntax is never echoed, so a tie-off adds
// no tasks to the vault.
func taskItem(t task, state bool) string {
	item := "*(empty task)*"
	if t.text != "" {
		item = inlineText(t.text)
	}
	if state && t.done {
		item += " (done)"
	}
	return item
}

// linkItem shows a link's target in a code span, so a tie-off adds no
// links or backlinks to the vault, followed by its text when that differs.
func linkItem(l link) string {
	var item string
	switch l.kind {
	case linkWiki:
		item = codeSpan("[[" + cleanText(l.target, maxTarget) + "]]")
	case linkEmbed:
		item = codeSpan("![[" + cleanText(l.target, maxTarget) + "]]")
	case linkImage:
		item = "image " + codeSpan(cleanText(l.target, maxTarget))
	default:
		item = codeSpan(cleanText(l.target, maxTarget))
	}
	if t := inlineText(l.text); t != "" {
		item += " (" + t + ")"
	}
	return item
}

// writer builds a digest: blocks separated by blank lines.
type writer struct {
	strings.Builder
	lists int // lists written
}

// line adds a paragraph of one line.
func (w *writer) line(s string) {
	if w.Len() > 0 {
		w.WriteByte('\n')
	}
	w.WriteString(s)
	w.WriteByte('\n')
}

// list adds "**label**" and a bullet list of n items, at most maxItems
// of them, then "… and N more". An empty list adds nothing.
func (w *writer) list(label string, n int, item func(i int) string) {
	if n == 0 {
		return
	}
	w.lists++
	w.line("**" + label + "**")
	for i := range min(n, maxItems) {
		w.WriteString("- " + item(i) + "\n")
	}
	if n > maxItems {
		w.WriteString("- … and " + strconv.Itoa(n-maxItems) + " more\n")
	}
}

// cleanText makes s one line of valid UTF-8 fit to echo: invalid bytes
// become U+FFFD, control characters and whitespace runs one space, bidi
// controls are dropped, and the result is trimmed and cut to limit characters
// (limit < 0: no limit) with "…" marking the cut.
func cleanText(s string, limit int) string {
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

// inlineText cleans s (see cleanText) and escapes it so that it reads as
// the same literal text wherever a digest puts it, at the start of a list
// item included: no emphasis, code, link, wikilink, HTML, entity, heading,
// tag, highlight, math, comment or list marker can come out of it.
func inlineText(s string) string {
	s = cleanText(s, maxText)
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

// codeSpan shows s (already cleaned) as a code span whose fence s cannot
// close.
func codeSpan(s string) string {
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
