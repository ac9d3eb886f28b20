package frontmatter

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// change is one key an edit sets to a value or deletes.
type change struct {
	key     string     // the key, exactly
	keyText string     // the key as YAML, for a new line; unused when del
	text    string     // the value as YAML on one line; unused when del
	del     bool       // delete the key
	want    *yaml.Node // text decoded on its own: what the key must read as
}

// setTo returns the change that sets key to text, a value already written
// as YAML on one line.
func setTo(key, text string) (change, error) {
	keyText, err := quote(key)
	if err != nil {
		return change{}, fmt.Errorf("frontmatter: key %q: %w", key, err)
	}
	want, err := decodeValue(text)
	if err != nil {
		return change{}, fmt.Errorf("frontmatter: %s: value %s does not read back: %w", key, text, err)
	}
	return change{key: key, keyText: keyText, text: text, want: want}, nil
}

// splice replaces src[start:end] with text.
type splice struct {
	start, end int
	text       string
}

// apply returns p.src with the changes made and every other byte kept.
// An existing key's value is replaced where it stands; a new key goes at
// the end of the block in the block's own indentation and line ending; a
// deleted key takes its own lines with it. A source without a block gets
// one at the top, after the BOM, unless it starts with a TOML block (+++),
// which a YAML block on top would break for Hugo. When nothing needs to
// change, apply returns p.src itself.
func (p *parsed) apply(cs []change) ([]byte, error) {
	l := p.layout
	eol := "\n"
	if l.crlf {
		eol = "\r\n"
	}
	if !l.found {
		if textEnd, _, _ := lineAt(p.src, l.bom); bytes.Equal(bytes.TrimRight(p.src[l.bom:textEnd], " \t"), []byte("+++")) {
			return nil, errors.New("frontmatter: line 1: the note has TOML frontmatter (+++), which knotd does not edit; convert it to YAML between --- lines")
		}
		var keys []byte
		for _, c := range cs {
			if !c.del {
				keys = appendKey(keys, "", c, eol)
			}
		}
		if len(keys) == 0 {
			return p.src, nil
		}
		out := make([]byte, 0, len(p.src)+len(keys)+2*(3+len(eol)))
		out = append(out, p.src[:l.bom]...)
		out = append(out, "---"+eol...)
		out = append(out, keys...)
		out = append(out, "---"+eol...)
		out = append(out, p.src[l.bom:]...)
		return p.check(out, cs)
	}
	if p.root != nil && p.root.Style&yaml.FlowStyle != 0 {
		return nil, p.lineErr(p.root.Line, "cannot edit a block written as one flow map {…}; write it as key: value lines")
	}
	var splices []splice
	var added []byte
	for _, c := range cs {
		i, err := p.find(c.key)
		if err != nil {
			return nil, err
		}
		switch {
		case i < 0 && c.del:
		case i < 0:
			added = appendKey(added, strings.Repeat(" ", p.indent()), c, eol)
		case c.del:
			first, last, err := p.entryLines(i)
			if err != nil {
				return nil, err
			}
			splices = append(splices, splice{p.lines[first].start, p.lines[last].next, ""})
		case sameNode(p.entries[i].v, c.want):
		default:
			s, err := p.valueSplice(i, c.text)
			if err != nil {
				return nil, err
			}
			splices = append(splices, s)
		}
	}
	if len(added) > 0 {
		splices = append(splices, splice{l.docEnd, l.docEnd, string(added)})
	}
	if len(splices) == 0 {
		return p.src, nil
	}
	slices.SortStableFunc(splices, func(a, b splice) int { return a.start - b.start })
	size := len(p.src)
	for i, s := range splices {
		if i > 0 && s.start < splices[i-1].end {
			return nil, errors.New("frontmatter: internal error: overlapping edits")
		}
		size += len(s.text) - (s.end - s.start)
	}
	out := make([]byte, 0, size)
	at := 0
	for _, s := range splices {
		out = append(out, p.src[at:s.start]...)
		out = append(out, s.text...)
		at = s.end
	}
	out = append(out, p.src[at:]...)
	return p.check(out, cs)
}

// appendKey appends the line "<indent><key>: <value><eol>" to b.
func appendKey(b []byte, indent string, c change, eol string) []byte {
	b = append(b, indent...)
	b = append(b, c.keyText...)
	b = append(b, ": "...)
	b = append(b, c.text...)
	return append(b, eol...)
}

// find returns the index of the entry with key, or -1.
func (p *parsed) find(key string) (int, error) {
	found := -1
	for i, e := range p.entries {
		if e.key != key {
			continue
		}
		if found >= 0 {
			return 0, p.lineErr(e.k.Line, "cannot edit %s: it is set more than once", key)
		}
		found = i
	}
	return found, nil
}

// indent returns the indentation of the block's keys.
func (p *parsed) indent() int {
	if p.root == nil || p.root.Column < 1 {
		return 0
	}
	return p.root.Column - 1
}

// entryLines returns the lines entry i occupies: from its key's line to the
// last line of its value, leaving out the blank and comment lines that
// follow the value (they belong to what comes next).
func (p *parsed) entryLines(i int) (first, last int, err error) {
	e := p.entries[i]
	koff := p.offset(e.k)
	if koff < 0 {
		return 0, 0, p.lineErr(e.k.Line, "cannot locate key %s", e.key)
	}
	first = p.lineOf(koff)
	ln := p.lines[first]
	if !isBlank(p.src[ln.start:koff]) {
		return 0, 0, p.lineErr(e.k.Line, "cannot edit %s: its line starts with something else than the key", e.key)
	}
	bound := p.layout.docEnd
	if i+1 < len(p.entries) {
		noff := p.offset(p.entries[i+1].k)
		if noff < 0 {
			return 0, 0, p.lineErr(p.entries[i+1].k.Line, "cannot locate the key after %s", e.key)
		}
		bound = p.lines[p.lineOf(noff)].start
	}
	keyIndent := koff - ln.start
	blockScalar := e.v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
	last = first
	for j := first + 1; j < len(p.lines) && p.lines[j].start < bound; j++ {
		t := p.src[p.lines[j].start:p.lines[j].end]
		if isBlank(t) || isComment(t) && (!blockScalar || indentOf(t) <= keyIndent) {
			continue
		}
		last = j
	}
	if p.lines[last].next > bound {
		return 0, 0, p.lineErr(e.k.Line, "cannot edit %s: its value runs into the next key", e.key)
	}
	return first, last, nil
}

// valueSplice returns the splice that gives entry i the value text. A value
// on the key's line is replaced by itself, keeping the spacing and any
// comment after it. A value over several lines (a block list, a nested
// map, a block scalar, a multi-line flow or quoted value) is replaced as a
// whole, comments inside it included; a comment on the key's line is kept
// when the value starts on the next line.
func (p *parsed) valueSplice(i int, text string) (splice, error) {
	first, last, err := p.entryLines(i)
	if err != nil {
		return splice{}, err
	}
	e := p.entries[i]
	ln := p.lines[first]
	line := p.src[:ln.end]
	colon, ok := keyEnd(line, p.offset(e.k))
	if !ok {
		return splice{}, p.lineErr(e.k.Line, "cannot edit %s: no \": \" after the key on its line", e.key)
	}
	after := colon + 1
	vs := after + indentOf(line[after:])
	hasComment := vs < ln.end && line[vs] == '#'
	if last > first {
		tail := ""
		if hasComment {
			tail = string(line[after:])
		}
		return splice{after, p.lines[last].end, " " + text + tail}, nil
	}
	if vs == ln.end || hasComment {
		return splice{after, after, " " + text}, nil
	}
	if ve, ok := valueEnd(line, vs); ok {
		return splice{vs, ve, text}, nil
	}
	return splice{after, ln.end, " " + text}, nil
}

// check re-reads an edited source and returns it only if the edit did what
// it should and nothing else: the block is still valid, each changed key
// reads as intended, every other key has the same value in the same order,
// and the body has not moved. Anything else is refused, leaving the
// strand as it was.
func (p *parsed) check(out []byte, cs []change) ([]byte, error) {
	refuse := func(why string) ([]byte, error) {
		keys := make([]string, len(cs))
		for i, c := range cs {
			keys[i] = c.key
		}
		return nil, fmt.Errorf("frontmatter: cannot edit %s in place (%s); the note is left unchanged", strings.Join(keys, ", "), why)
	}
	q, err := parse(out)
	if err != nil {
		return refuse("the result would not parse: " + err.Error())
	}
	if len(out)-q.layout.end != len(p.src)-p.layout.end {
		return refuse("the body would move")
	}
	changed := func(key string) bool {
		return slices.ContainsFunc(cs, func(c change) bool { return c.key == key })
	}
	a, b := 0, 0
	for {
		for a < len(p.entries) && changed(p.entries[a].key) {
			a++
		}
		for b < len(q.entries) && changed(q.entries[b].key) {
			b++
		}
		if a == len(p.entries) || b == len(q.entries) {
			break
		}
		if !sameNode(p.entries[a].k, q.entries[b].k) || !sameNode(p.entries[a].v, q.entries[b].v) {
			return refuse("key " + p.entries[a].key + " would change")
		}
		a, b = a+1, b+1
	}
	if a != len(p.entries) || b != len(q.entries) {
		return refuse("other keys would change")
	}
	for _, c := range cs {
		i, err := q.find(c.key)
		switch {
		case err != nil:
			return refuse(err.Error())
		case c.del && i >= 0:
			return refuse(c.key + " would remain")
		case !c.del && (i < 0 || !sameNode(q.entries[i].v, c.want)):
			return refuse(c.key + " would not read back as " + c.text)
		}
	}
	return out, nil
}

// sameNode reports whether two YAML trees hold the same data, whatever
// their layout, style and comments.
func sameNode(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || a.Value != b.Value ||
		a.Anchor != b.Anchor || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !sameNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// lineErr is an error about a line of the block, given as yaml.v3 counts.
func (p *parsed) lineErr(yamlLine int, format string, args ...any) error {
	return fmt.Errorf("frontmatter: line %d: "+format, append([]any{p.fileLine(yamlLine)}, args...)...)
}
