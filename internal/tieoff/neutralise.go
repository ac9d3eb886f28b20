package tieoff

import (
	"bytes"
	"slices"
	"sync"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// blockParser is a goldmark CommonMark parser without inline parsers: the
// tie-off format only depends on block structure, and skipping inline
// parsing makes Parse several times faster. A goldmark parser is safe for
// concurrent use once built; it is never modified after this.
var blockParser = sync.OnceValue(func() parser.Parser {
	return parser.NewParser(
		parser.WithBlockParsers(parser.DefaultBlockParsers()...),
		parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
	)
})

func parseBlocks(src []byte) ast.Node {
	return blockParser().Parse(text.NewReader(src))
}

// prepareBody returns the reply as Format writes it: header and marker
// imitations neutralised, a final newline, and every block left open at the
// end closed.
func prepareBody(reply []byte) []byte {
	b := neutralise(reply)
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	if len(b) == 0 {
		return b
	}
	if c, ok := closers(b); ok {
		return append(b, c...)
	}
	return fence(b)
}

// neutralise puts a backslash before the first '#' of every line that
// imitates a header and before the ':' of every "<!-- knot:" marker
// imitation. A lone CR counts as a line break here, as CommonMark says,
// although goldmark does not treat it as one. It returns a new slice.
func neutralise(b []byte) []byte {
	var at []int // positions before which a backslash goes
	for ls := 0; ls <= len(b); {
		le := ls
		for le < len(b) && b[le] != '\n' && b[le] != '\r' {
			le++
		}
		if h, ok := imitatesHeader(b[ls:le]); ok {
			at = append(at, ls+h)
		}
		if le >= len(b) {
			break
		}
		ls = le + 1
		if b[le] == '\r' && ls < len(b) && b[ls] == '\n' {
			ls++
		}
	}
	for i := 0; ; {
		k := bytes.Index(b[i:], []byte("<!--"))
		if k < 0 {
			break
		}
		j := skipBlanks(b, i+k+4)
		if len(b)-j >= 4 && bytes.EqualFold(b[j:j+4], []byte("knot")) {
			if c := skipBlanks(b, j+4); c < len(b) && b[c] == ':' {
				at = append(at, c)
			}
		}
		i += k + 4
	}
	out := make([]byte, 0, len(b)+len(at))
	if len(at) == 0 {
		return append(out, b...)
	}
	slices.Sort(at)
	last := 0
	for _, p := range at {
		out = append(out, b[last:p]...)
		out = append(out, '\\')
		last = p
	}
	return append(out, b[last:]...)
}

// imitatesHeader reports whether line is, after any blanks, a run of '#'
// then optional blanks then a header word (any case), optional blanks and
// a colon; and where its first '#' is. This is deliberately wider than what
// parseHeader accepts.
func imitatesHeader(line []byte) (int, bool) {
	h := skipBlanks(line, 0)
	i := h
	for i < len(line) && line[i] == '#' {
		i++
	}
	if i == h {
		return 0, false
	}
	w, _ := headerWordAt(line, skipBlanks(line, i))
	return h, w != ""
}

// probeHeader follows a body in the closedness check.
const probeHeader = "## Event: Created\n"

// openBlock parses text (which ends with a newline) followed by a separator
// and an Event header. It returns nil when the header comes out as a
// top-level H2 right after a top-level thematic break, that is when
// anything appended after a separator starts afresh; otherwise it returns
// the top-level block that swallowed the separator.
func openBlock(t []byte) ast.Node {
	probe := make([]byte, 0, len(t)+len(separator)+len(probeHeader))
	probe = append(append(append(probe, t...), separator...), probeHeader...)
	doc := parseBlocks(probe)
	last := doc.LastChild()
	if h, ok := last.(*ast.Heading); ok && h.Level == 2 && h.Pos() == len(t)+len(separator) {
		if tb, ok := last.PreviousSibling().(*ast.ThematicBreak); ok && tb.Pos() == len(t)+1 {
			return nil
		}
	}
	var n ast.Node
	for c := doc.FirstChild(); c != nil; c = c.NextSibling() {
		if c.Pos() >= 0 && c.Pos() < len(t) {
			n = c
		}
	}
	return n
}

// closers returns the lines that close whatever t (text ending in a
// newline) leaves open at its end, so that a separator and a header after
// them start afresh. ok is false if no closing lines could be found.
func closers(t []byte) (c []byte, ok bool) {
	work := slices.Clip(t)
	for range 4 {
		n := openBlock(work)
		if n == nil {
			return c, true
		}
		line, ok := closingLine(work, n)
		if !ok {
			return nil, false
		}
		c = append(c, line...)
		work = append(work, line...)
	}
	return nil, false
}

// closingLine returns the line that closes block n, an open fenced code
// block or HTML block of src.
func closingLine(src []byte, n ast.Node) ([]byte, bool) {
	p := n.Pos()
	if p < 0 || p >= len(src) {
		return nil, false
	}
	p = skipBlanks(src, p)
	switch n := n.(type) {
	case *ast.FencedCodeBlock:
		if p >= len(src) || src[p] != '`' && src[p] != '~' {
			return nil, false
		}
		k := p
		for k < len(src) && src[k] == src[p] {
			k++
		}
		return append(bytes.Clone(src[p:k]), '\n'), true
	case *ast.HTMLBlock:
		switch n.HTMLBlockType {
		case ast.HTMLBlockType1:
			start := bytes.ToLower(src[p:min(len(src), p+10)])
			for _, tag := range []string{"script", "style", "textarea"} {
				if bytes.HasPrefix(start, []byte("<"+tag)) {
					return []byte("</" + tag + ">\n"), true
				}
			}
			return []byte("</pre>\n"), true
		case ast.HTMLBlockType2:
			return []byte("-->\n"), true
		case ast.HTMLBlockType3:
			return []byte("?>\n"), true
		case ast.HTMLBlockType4:
			return []byte(">\n"), true
		case ast.HTMLBlockType5:
			return []byte("]]>\n"), true
		}
	}
	return nil, false
}

// fence wraps b (ending in a newline) in a backtick code fence longer than
// any run of backticks in it, which nothing inside can close.
func fence(b []byte) []byte {
	f := bytes.Repeat([]byte("`"), max(3, longestRun(b, '`')+1))
	out := make([]byte, 0, len(b)+2*len(f)+2)
	out = append(append(out, f...), '\n')
	out = append(out, b...)
	return append(append(out, f...), '\n')
}
