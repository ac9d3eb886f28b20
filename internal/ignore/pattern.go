package ignore

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// pattern is one line of an ignore file, parsed with gitignore semantics.
type pattern struct {
	negate   bool   // "!pattern": re-include what an earlier pattern excluded
	dirOnly  bool   // "pattern/": only directories match
	anchored bool   // a slash at the start or in the middle: relative to the file's directory
	segs     []glob // anchored: one glob per path element ("**" spans elements); else one glob for the base name

	src  string // where it came from, for Explain: "notes/.gitignore"
	line int    // 1-based line number in src
	text string // the line as written, for Explain
}

// parsePattern parses one ignore-file line. It reports false for blank
// lines, comments and lines that are empty once trailing spaces and the
// "!" and "/" markers are removed.
func parsePattern(line string) (pattern, bool) {
	p := pattern{text: line}
	if line == "" || line[0] == '#' {
		return p, false
	}
	s := trimTrailingSpaces(line)
	if strings.HasPrefix(s, "!") {
		p.negate = true
		s = s[1:]
	}
	if strings.HasSuffix(s, "/") {
		p.dirOnly = true
		s = strings.TrimSuffix(s, "/")
	}
	if strings.Contains(s, "/") {
		p.anchored = true
		s = strings.TrimPrefix(s, "/")
	}
	if s == "" {
		return p, false
	}
	if !p.anchored {
		p.segs = []glob{compileGlob(collapseStars(s))}
		return p, true
	}
	for _, g := range strings.Split(s, "/") {
		if g != "**" {
			g = collapseStars(g)
		}
		p.segs = append(p.segs, compileGlob(g))
	}
	return p, true
}

// glob is one path element's pattern, with the common shapes ("name",
// "*.ext", "prefix*", "*") recognised so they match without the general
// matcher.
type glob struct {
	kind globKind
	lit  string // the literal part for globLiteral, globSuffix and globPrefix
	raw  string // the pattern as written (collapsed)
}

type globKind uint8

const (
	globGeneral    globKind = iota // anything else: matchElem
	globLiteral                    // no special characters
	globSuffix                     // "*" then a literal
	globPrefix                     // a literal then "*"
	globAny                        // "*"
	globDoubleStar                 // "**" as a whole element: any number of elements
)

func compileGlob(g string) glob {
	const special = "*?[\\"
	switch {
	case g == "**":
		return glob{kind: globDoubleStar, raw: g}
	case g == "*":
		return glob{kind: globAny, raw: g}
	case !strings.ContainsAny(g, special):
		return glob{kind: globLiteral, lit: g, raw: g}
	case g[0] == '*' && !strings.ContainsAny(g[1:], special):
		return glob{kind: globSuffix, lit: g[1:], raw: g}
	case g[len(g)-1] == '*' && !strings.ContainsAny(g[:len(g)-1], special):
		return glob{kind: globPrefix, lit: g[:len(g)-1], raw: g}
	}
	return glob{kind: globGeneral, raw: g}
}

// match reports whether one path element matches.
func (g glob) match(name string) bool {
	switch g.kind {
	case globLiteral:
		return name == g.lit
	case globSuffix:
		return strings.HasSuffix(name, g.lit)
	case globPrefix:
		return strings.HasPrefix(name, g.lit)
	case globAny:
		return true
	case globDoubleStar:
		return false // only meaningful between elements, in matchSegs
	}
	return matchElem(g.raw, name)
}

// trimTrailingSpaces removes trailing spaces that are not escaped with a
// backslash, as git does.
func trimTrailingSpaces(s string) string {
	end := len(s)
	for end > 0 && s[end-1] == ' ' {
		// Count the backslashes before this space: an odd number escapes it.
		bs := 0
		for i := end - 2; i >= 0 && s[i] == '\\'; i-- {
			bs++
		}
		if bs%2 == 1 {
			break
		}
		end--
	}
	return s[:end]
}

// collapseStars turns runs of "*" inside a path element into one "*": git
// treats "**" that is not a whole element like a single star.
func collapseStars(g string) string {
	if !strings.Contains(g, "**") {
		return g
	}
	b := make([]byte, 0, len(g))
	prevStar := false
	for i := 0; i < len(g); i++ {
		c := g[i]
		if c == '\\' && i+1 < len(g) {
			b = append(b, c, g[i+1])
			i++
			prevStar = false
			continue
		}
		if c == '*' && prevStar {
			continue
		}
		prevStar = c == '*'
		b = append(b, c)
	}
	return string(b)
}

// match reports whether the pattern matches a path given as its elements
// relative to the directory of the pattern's ignore file. It matches the
// path exactly (not a prefix of it): Rules applies patterns to each
// ancestor directory separately.
func (p *pattern) match(elems []string, isDir bool) bool {
	if len(elems) == 0 || (p.dirOnly && !isDir) {
		return false
	}
	if !p.anchored {
		return p.segs[0].match(elems[len(elems)-1])
	}
	return matchSegs(p.segs, elems)
}

// matchSegs matches glob elements against path elements; "**" matches zero
// or more whole elements, and a trailing "**" one or more ("dir/**" matches
// what is inside dir, not dir itself). Like matchElem's "*", only the last
// "**" is ever backtracked to, which is enough and keeps the cost at
// O(len(segs)*len(elems)) even for patterns like "**/a/**/a/**/a".
func matchSegs(segs []glob, elems []string) bool {
	si, ei := 0, 0
	starSi, starEi := -1, 0
	for {
		switch {
		case si == len(segs)-1 && segs[si].kind == globDoubleStar:
			if ei < len(elems) {
				return true
			}
		case si < len(segs) && segs[si].kind == globDoubleStar:
			starSi, starEi = si, ei
			si++
			continue
		case si < len(segs) && ei < len(elems) && segs[si].match(elems[ei]):
			si, ei = si+1, ei+1
			continue
		case si == len(segs) && ei == len(elems):
			return true
		}
		if starSi >= 0 && starEi < len(elems) {
			starEi++
			si, ei = starSi+1, starEi
			continue
		}
		return false
	}
}

// matchElem reports whether name (one path element, no slash) matches the
// glob g: "*" any run of characters, "?" one character, "[...]" a class
// ("[!...]" or "[^...]" negated, ranges, POSIX "[:alpha:]" classes), and
// "\" escaping the next character. A malformed class matches nothing.
// Characters are runes, not bytes.
func matchElem(g, name string) bool {
	px, nx := 0, 0
	starPx, starNx := -1, 0
	for px < len(g) || nx < len(name) {
		if px < len(g) {
			switch g[px] {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(name) {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px, nx = px+1, nx+w
					continue
				}
			case '[':
				if nx < len(name) {
					r, w := utf8.DecodeRuneInString(name[nx:])
					ok, n, valid := matchClass(g[px:], r)
					if !valid {
						return false
					}
					if ok {
						px, nx = px+n, nx+w
						continue
					}
				}
			default:
				lit := px
				if g[px] == '\\' {
					if px+1 == len(g) {
						return false // a trailing backslash escapes nothing
					}
					lit = px + 1
				}
				// Compare the encoded character, so invalid UTF-8 bytes
				// only match themselves.
				_, pw := utf8.DecodeRuneInString(g[lit:])
				if strings.HasPrefix(name[nx:], g[lit:lit+pw]) {
					px, nx = lit+pw, nx+pw
					continue
				}
			}
		}
		// Mismatch: let the last star swallow one more character.
		if starPx >= 0 && starNx < len(name) {
			_, w := utf8.DecodeRuneInString(name[starNx:])
			starNx += w
			px, nx = starPx+1, starNx
			continue
		}
		return false
	}
	return true
}

// matchClass matches r against the bracket expression at the start of g.
// It returns whether r matched, the length of the expression, and false
// for valid if the expression is not closed.
func matchClass(g string, r rune) (matched bool, n int, valid bool) {
	i := 1
	negated := false
	if i < len(g) && (g[i] == '!' || g[i] == '^') {
		negated = true
		i++
	}
	first := true
	for {
		if i >= len(g) {
			return false, 0, false
		}
		if g[i] == ']' && !first {
			return matched != negated, i + 1, true
		}
		first = false
		if strings.HasPrefix(g[i:], "[:") {
			end := strings.Index(g[i+2:], ":]")
			if end < 0 {
				return false, 0, false
			}
			name := g[i+2 : i+2+end]
			in, known := posixClass(name, r)
			if !known {
				return false, 0, false
			}
			matched = matched || in
			i += 2 + end + 2
			continue
		}
		lo, w, ok := classRune(g, i)
		if !ok {
			return false, 0, false
		}
		i += w
		hi := lo
		if i+1 < len(g) && g[i] == '-' && g[i+1] != ']' {
			h, w2, ok := classRune(g, i+1)
			if !ok {
				return false, 0, false
			}
			hi = h
			i += 1 + w2
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
}

// classRune decodes the (possibly backslash-escaped) rune at g[i].
func classRune(g string, i int) (r rune, width int, ok bool) {
	if g[i] == '\\' {
		if i+1 >= len(g) {
			return 0, 0, false
		}
		r, w := utf8.DecodeRuneInString(g[i+1:])
		return r, w + 1, true
	}
	r, w := utf8.DecodeRuneInString(g[i:])
	return r, w, true
}

// posixClass reports whether r is in the named POSIX character class, and
// false for known if there is no such class.
func posixClass(name string, r rune) (in, known bool) {
	switch name {
	case "alnum":
		return unicode.IsLetter(r) || unicode.IsDigit(r), true
	case "alpha":
		return unicode.IsLetter(r), true
	case "blank":
		return r == ' ' || r == '\t', true
	case "cntrl":
		return unicode.IsControl(r), true
	case "digit":
		return '0' <= r && r <= '9', true
	case "graph":
		return unicode.IsGraphic(r) && !unicode.IsSpace(r), true
	case "lower":
		return unicode.IsLower(r), true
	case "print":
		return unicode.IsPrint(r), true
	case "punct":
		return unicode.IsPunct(r) || unicode.IsSymbol(r), true
	case "space":
		return unicode.IsSpace(r), true
	case "upper":
		return unicode.IsUpper(r), true
	case "xdigit":
		return strings.ContainsRune("0123456789abcdefABCDEF", r), true
	}
	return false, false
}
