package ignore

import (
	"fmt"
	"strings"
)

// Scope is a path pattern of a configuration rule (rules: path:), in the
// syntax of an ignore file's lines: "journal/" or "journal/**" is the
// folder and all in it, "*.private.md" any note so named, "/inbox/*.md"
// the notes directly in the top-level inbox folder. A note is in the
// scope when the pattern matches its path or one of the folders above it,
// as a .gitignore line would ignore it. "!" (negation) has no meaning
// here and is refused.
type Scope struct {
	text string
	p    pattern
}

// CompileScope compiles a rule's path pattern.
func CompileScope(s string) (Scope, error) {
	if strings.HasPrefix(s, "!") {
		return Scope{}, fmt.Errorf("path %q: a rule's path cannot be negated with '!'", s)
	}
	p, ok := parsePattern(s)
	if !ok || strings.ContainsRune(s, 0) {
		return Scope{}, fmt.Errorf("path %q is not a pattern", s)
	}
	return Scope{text: s, p: p}, nil
}

// String returns the pattern as written.
func (s Scope) String() string { return s.text }

// Contains reports whether the note at rel (vault-relative, slash-
// separated) is in the scope.
func (s Scope) Contains(rel string) bool {
	elems := strings.Split(rel, "/")
	for i := 1; i <= len(elems); i++ {
		if s.p.match(elems[:i], i < len(elems)) {
			return true
		}
	}
	return false
}
