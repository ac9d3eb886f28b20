package frontmatter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	adrg "github.com/adrg/frontmatter"
	"gopkg.in/yaml.v3"
)

// Span is the half-open byte range [Start, End) of a source document.
type Span struct {
	Start, End int
}

// Document is a strand split into its frontmatter block and its body.
type Document struct {
	// Fields are knotd's keys read from the block.
	Fields Fields
	// Block is the byte range of the frontmatter block, from the opening
	// --- line through the closing --- line and its line break. When the
	// strand has no frontmatter the span is empty and sits just after the
	// BOM, if any.
	Block Span
	// Body is every byte after the block: a slice of the source, not a copy.
	Body []byte
	// BOM reports whether the source starts with a UTF-8 byte order mark.
	BOM bool
	// CRLF reports whether the source uses CRLF line endings: those of the
	// opening --- line, or of the first line when there is no block.
	CRLF bool
}

// SyntaxError is why a frontmatter block cannot be read: it is not
// terminated, or it is not valid YAML, or it is valid YAML but not a map of
// keys, or a knotd key appears twice.
type SyntaxError struct {
	// Line is the 1-based line of the source the problem is on.
	Line int
	// Msg says what is wrong, and where possible how to fix it.
	Msg string
}

// Error returns "frontmatter: line N: message".
func (e *SyntaxError) Error() string {
	return "frontmatter: line " + strconv.Itoa(e.Line) + ": " + e.Msg
}

var utf8BOM = []byte("\uFEFF")

// Parse reads the frontmatter block at the top of src and knotd's keys in it.
//
// A block starts when the first line (after an optional UTF-8 BOM) is ---
// and ends at the next line that is --- in the first column; trailing
// blanks and a CR before the newline are allowed on both lines, and the
// closing line may end the file. A source that does not start with --- has
// no frontmatter: Fields are all unset and Body is the whole source.
//
// Parse returns a *SyntaxError only for an unterminated block or a block
// that is not valid YAML (or not a map of keys); a knotd key with a wrong
// value is reported in Fields.Problems instead. Parse never panics. Its
// cost does not depend on the body: it reads src up to the end of the
// block (or the end of the first line, when there is no block; or all of
// it, to report an unterminated block), and Body aliases src.
func Parse(src []byte) (Document, error) {
	p, err := parse(src)
	if err != nil {
		return Document{}, err
	}
	return p.document(), nil
}

// layout is where the parts of a source are.
type layout struct {
	bom     int  // length of the BOM: 0 or 3
	found   bool // there is a block
	content Span // the YAML between the delimiter lines
	end     int  // end of the block: after the closing line's line break
	docEnd  int  // where new keys go: content.End, or a "..." line inside it
	crlf    bool
}

// scan finds the frontmatter block of src by looking at its lines; it does
// not read the body beyond the closing line.
func scan(src []byte) (layout, error) {
	l := layout{}
	if bytes.HasPrefix(src, utf8BOM) {
		l.bom = len(utf8BOM)
	}
	l.content = Span{l.bom, l.bom}
	l.end, l.docEnd = l.bom, l.bom
	textEnd, next, crlf := lineAt(src, l.bom)
	if !isDelimiter(src[l.bom:textEnd]) {
		if nl := bytes.IndexByte(src[l.bom:], '\n'); nl > 0 {
			l.crlf = src[l.bom+nl-1] == '\r'
		}
		return l, nil
	}
	l.crlf = crlf
	l.content.Start = next
	l.docEnd = -1
	for start := next; start < len(src); start = next {
		textEnd, next, _ = lineAt(src, start)
		line := src[start:textEnd]
		if isDelimiter(line) {
			l.found = true
			l.content.End, l.end = start, next
			if l.docEnd < 0 {
				l.docEnd = start
			}
			return l, nil
		}
		if l.docEnd < 0 && isDocumentEnd(line) {
			l.docEnd = start
		}
	}
	return layout{}, &SyntaxError{Line: 1, Msg: "unterminated block starts here: add a closing --- line after the last key"}
}

// lineAt returns the end of the text of the line starting at i (before
// its "\n" or "\r\n", or a final "\r") and the start of the next line.
func lineAt(src []byte, i int) (textEnd, next int, crlf bool) {
	nl := bytes.IndexByte(src[i:], '\n')
	if nl < 0 {
		textEnd, next = len(src), len(src)
	} else {
		textEnd, next = i+nl, i+nl+1
	}
	if textEnd > i && src[textEnd-1] == '\r' {
		textEnd--
		crlf = nl >= 0
	}
	return textEnd, next, crlf
}

// isDelimiter reports whether a line's text is a --- delimiter line.
func isDelimiter(line []byte) bool {
	return bytes.Equal(bytes.TrimRight(line, " \t"), []byte("---"))
}

// isDocumentEnd reports whether a line is YAML's document end marker
// ("..." in the first column), after which no key may follow.
func isDocumentEnd(line []byte) bool {
	return bytes.HasPrefix(line, []byte("...")) && (len(line) == 3 || line[3] == ' ' || line[3] == '\t')
}

// parsed is a source with its layout, its YAML and its knotd fields: what
// Parse reports and what the edits work on.
type parsed struct {
	src     []byte
	layout  layout
	lines   []lineSpan // the block's lines as YAML counts them
	root    *yaml.Node // the top-level map; nil for an empty block
	entries []entry
	fields  Fields
	// fileLines are the source lines of the block's lines, and last of the
	// block's end (numberLines); counted is how many bytes of src
	// numbering them read, which a test bounds.
	fileLines []int
	counted   int
}

// entry is one top-level key and its value.
type entry struct {
	key  string // the key's text when it is a string, else ""
	k, v *yaml.Node
}

func parse(src []byte) (*parsed, error) {
	l, err := scan(src)
	if err != nil {
		return nil, err
	}
	p := &parsed{src: src, layout: l}
	if !l.found {
		return p, nil
	}
	p.lines = splitLines(src, l.content)
	node, err := decode(src[l.bom:l.end], src[l.content.Start:l.content.End])
	if err != nil {
		return nil, p.syntaxError(err)
	}
	if err := p.setRoot(node); err != nil {
		return nil, err
	}
	if err := p.readFields(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *parsed) document() Document {
	l := p.layout
	return Document{
		Fields: p.fields,
		Block:  Span{l.bom, l.end},
		Body:   p.src[l.end:],
		BOM:    l.bom > 0,
		CRLF:   l.crlf,
	}
}

// yamlFormat is the one frontmatter format knotd reads: YAML between ---
// lines, decoded into a yaml.v3 node tree so that every key keeps its
// position.
var yamlFormat = adrg.NewFormat("---", "---", decodeYAML)

// decode decodes the YAML content of a block with adrg/frontmatter. block
// runs from the opening line through the closing line. adrg/frontmatter
// ends a block at any line that trims to ---, including an indented one
// inside a block scalar where YAML (and Jekyll, Hugo, Obsidian) see content;
// the scanner has already found the real end, so when adrg stops early the
// content it must decode is handed to the same decoder directly.
func decode(block, content []byte) (*yaml.Node, error) {
	var node yaml.Node
	rest, err := adrg.MustParse(bytes.NewReader(block), &node, yamlFormat)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		node = yaml.Node{}
		if err := decodeYAML(content, &node); err != nil {
			return nil, err
		}
	}
	return &node, nil
}

// errSecondDocument reports YAML content holding more than one document.
type errSecondDocument struct{ line int }

func (e errSecondDocument) Error() string { return "second document" }

// decodeYAML decodes one YAML document into v, a *yaml.Node. Empty content
// leaves the node empty. A panic in the decoder is returned as an error so
// that no input can bring knotd down.
func decodeYAML(data []byte, v any) (err error) {
	node, ok := v.(*yaml.Node)
	if !ok {
		return fmt.Errorf("frontmatter: decode into %T", v)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: decoder failed: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(node); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return err
	default:
		return errSecondDocument{extra.Line}
	}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxError turns a YAML decoding error into a *SyntaxError on the
// source's own line.
func (p *parsed) syntaxError(err error) error {
	var second errSecondDocument
	if errors.As(err, &second) {
		return &SyntaxError{Line: p.fileLine(second.line), Msg: "a second YAML document starts here; frontmatter holds one map of keys"}
	}
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return &SyntaxError{Line: p.fileLine(n), Msg: "invalid YAML: " + msg[len(m[0]):]}
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	return &SyntaxError{Line: 1, Msg: "invalid YAML in the block starting here: " + msg}
}

// setRoot checks that the decoded YAML is a map of keys (or nothing) and
// lists its entries.
func (p *parsed) setRoot(doc *yaml.Node) error {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		what := describe(root)
		return &SyntaxError{Line: p.fileLine(root.Line), Msg: "the block must be a map of key: value lines, not " + what}
	}
	p.root = root
	p.entries = make([]entry, 0, len(root.Content)/2)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		e := entry{k: k, v: v}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!str" {
			e.key = k.Value
		}
		p.entries = append(p.entries, e)
	}
	return nil
}

// fileLine converts a line of the block's YAML (as yaml.v3 counts lines)
// to a line of the source (as editors count them). The source is read
// once, on the first call, for the lines of all the block's lines: a
// block of many keys with a problem each costs linear time, not
// quadratic.
func (p *parsed) fileLine(yamlLine int) int {
	if p.fileLines == nil {
		p.numberLines()
	}
	switch {
	case yamlLine < 1:
		return p.fileLines[0]
	case yamlLine > len(p.lines):
		return p.fileLines[len(p.fileLines)-1]
	}
	return p.fileLines[yamlLine-1]
}

// numberLines fills p.fileLines: the source line on which each of the
// block's lines starts, and last the one on which the block's content
// ends.
func (p *parsed) numberLines() {
	count := func(b []byte) int {
		p.counted += len(b)
		return bytes.Count(b, []byte("\n"))
	}
	c := p.layout.content
	n := 1 + count(p.src[:c.Start])
	p.fileLines = make([]int, 0, len(p.lines)+1)
	off := c.Start
	for _, l := range p.lines {
		n += count(p.src[off:l.start])
		p.fileLines = append(p.fileLines, n)
		off = l.start
	}
	p.fileLines = append(p.fileLines, n+count(p.src[off:c.End]))
}
