package frontmatter

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// lineSpan is one line of a block: its text [start, end) and the start of
// the line after it (after the line break).
type lineSpan struct {
	start, end, next int
}

// splitLines splits the block's content into lines the way yaml.v3 counts
// them: CRLF, CR, LF, NEL, LS and PS all end a line. Node positions are
// given in these lines, so offsets computed from them are exact even in a
// block with stray carriage returns.
func splitLines(src []byte, content Span) []lineSpan {
	lines := make([]lineSpan, 0, 16)
	start := content.Start
	for i := start; i < content.End; {
		n := breakLen(src[i:content.End])
		if n == 0 {
			i++
			continue
		}
		lines = append(lines, lineSpan{start, i, i + n})
		i += n
		start = i
	}
	if start < content.End {
		lines = append(lines, lineSpan{start, content.End, content.End})
	}
	return lines
}

// breakLen returns the length of the line break at the start of b, or 0.
func breakLen(b []byte) int {
	switch {
	case len(b) == 0:
		return 0
	case b[0] == '\n':
		return 1
	case b[0] == '\r':
		if len(b) > 1 && b[1] == '\n' {
			return 2
		}
		return 1
	case len(b) > 1 && b[0] == 0xC2 && b[1] == 0x85: // NEL
		return 2
	case len(b) > 2 && b[0] == 0xE2 && b[1] == 0x80 && (b[2] == 0xA8 || b[2] == 0xA9): // LS, PS
		return 3
	}
	return 0
}

// offset returns the source offset of a node's position (1-based line and
// column in characters, as yaml.v3 reports it), or -1 when the position is
// not inside the block.
func (p *parsed) offset(n *yaml.Node) int {
	if n.Line < 1 || n.Line > len(p.lines) || n.Column < 1 {
		return -1
	}
	ln := p.lines[n.Line-1]
	i := ln.start
	if n.Line == 1 && bytes.HasPrefix(p.src[i:ln.end], utf8BOM) {
		i += len(utf8BOM) // yaml.v3 drops a BOM at the start of its input
	}
	for col := 1; col < n.Column; col++ {
		if i >= ln.end {
			return -1
		}
		_, w := utf8.DecodeRune(p.src[i:ln.end])
		i += w
	}
	return i
}

// lineOf returns the index in p.lines of the line holding offset off.
func (p *parsed) lineOf(off int) int {
	lo, hi := 0, len(p.lines)
	for lo < hi {
		m := (lo + hi) / 2
		if p.lines[m].next <= off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// indentOf returns the number of leading blanks of a line's text.
func indentOf(text []byte) int {
	n := 0
	for n < len(text) && (text[n] == ' ' || text[n] == '\t') {
		n++
	}
	return n
}

// isBlank reports whether a line's text is only blanks.
func isBlank(text []byte) bool { return indentOf(text) == len(text) }

// isComment reports whether a line's text is only a comment.
func isComment(text []byte) bool {
	i := indentOf(text)
	return i < len(text) && text[i] == '#'
}

// The scanners below work on one line of a block (b ends where the line's
// text ends) and find where a key or a one-line value ends, which yaml.v3
// does not report. They are only ever used on YAML that parsed, and every
// edit made with them is checked by parsing its result.

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// skipProperties skips a node's anchor and tag (&a !!str) at b[i:].
func skipProperties(b []byte, i int) int {
	for i < len(b) && (b[i] == '&' || b[i] == '!') {
		for i < len(b) && !isSpace(b[i]) {
			i++
		}
		for i < len(b) && isSpace(b[i]) {
			i++
		}
	}
	return i
}

// keyEnd returns the offset of the ":" that ends the block-map key starting
// at b[i:].
func keyEnd(b []byte, i int) (int, bool) {
	if i < 0 || i >= len(b) {
		return 0, false
	}
	i = skipProperties(b, i)
	if i < len(b) && (b[i] == '"' || b[i] == '\'') {
		end, ok := quotedEnd(b, i)
		if !ok {
			return 0, false
		}
		for end < len(b) && isSpace(b[end]) {
			end++
		}
		return end, end < len(b) && b[end] == ':'
	}
	for j := i; j < len(b); j++ {
		if b[j] == ':' && (j+1 == len(b) || isSpace(b[j+1])) {
			return j, true
		}
	}
	return 0, false
}

// valueEnd returns the end of the one-line value starting at b[i:], where
// b ends at the end of the line; ok is false unless only blanks and a
// comment follow the value.
func valueEnd(b []byte, i int) (end int, ok bool) {
	i = skipProperties(b, i)
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"', '\'':
		end, ok = quotedEnd(b, i)
	case '[', '{':
		end, ok = flowEnd(b, i)
	case '#':
		return 0, false
	default:
		end, ok = len(b), true
		for j := i + 1; j < len(b); j++ {
			if b[j] == '#' && isSpace(b[j-1]) {
				end = j
				break
			}
		}
		for end > i && isSpace(b[end-1]) {
			end--
		}
	}
	if !ok {
		return 0, false
	}
	rest := end + indentOf(b[end:])
	if rest < len(b) && (b[rest] != '#' || rest == end) {
		return 0, false
	}
	return end, true
}

// quotedEnd returns the offset just after the quoted scalar at b[i:].
func quotedEnd(b []byte, i int) (int, bool) {
	q := b[i]
	for j := i + 1; j < len(b); j++ {
		switch {
		case q == '"' && b[j] == '\\':
			j++
		case b[j] == q && q == '\'' && j+1 < len(b) && b[j+1] == '\'':
			j++
		case b[j] == q:
			return j + 1, true
		}
	}
	return 0, false
}

// flowEnd returns the offset just after the flow collection at b[i:] when
// it closes on this line.
func flowEnd(b []byte, i int) (int, bool) {
	depth := 0
	prev := byte(',')
	for j := i; j < len(b); j++ {
		c := b[j]
		switch {
		case (c == '"' || c == '\'') && strings.IndexByte("[{,:", prev) >= 0:
			end, ok := quotedEnd(b, j)
			if !ok {
				return 0, false
			}
			j = end - 1
		case c == '#' && j > i && isSpace(b[j-1]):
			return 0, false
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
		if !isSpace(c) {
			prev = c
		}
	}
	return 0, false
}
