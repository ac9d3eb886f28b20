// Package jsonpointer parses RFC 6901 JSON pointers and looks them up in
// documents decoded by encoding/json: how a generic command agent's reply
// and resume handle are read from its JSON output.
package jsonpointer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Pointer is a parsed RFC 6901 JSON pointer: the reference tokens, unescaped.
// The empty pointer (no tokens) refers to the whole document.
type Pointer []string

// Parse parses an RFC 6901 pointer: "" or a sequence of "/token",
// where "~1" stands for "/" and "~0" for "~".
func Parse(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if !strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("JSON pointer %q must be empty or start with '/'", s)
	}
	raw := strings.Split(s[1:], "/")
	p := make(Pointer, len(raw))
	for i, tok := range raw {
		for j := 0; j < len(tok); j++ {
			if tok[j] == '~' && (j+1 == len(tok) || tok[j+1] != '0' && tok[j+1] != '1') {
				return nil, fmt.Errorf("JSON pointer %q: '~' must be followed by 0 or 1", s)
			}
		}
		p[i] = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
	}
	return p, nil
}

// String returns the pointer in its RFC 6901 form.
func (p Pointer) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

var errNoValue = errors.New("no value")

// lookup returns the value p refers to in doc, a value decoded by
// encoding/json into any (maps, slices, strings, json.Number, bools, nil).
func (p Pointer) lookup(doc any) (any, error) {
	v := doc
	for i, tok := range p {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[tok]
			if !ok {
				return nil, fmt.Errorf("%w at %s", errNoValue, p[:i+1])
			}
			v = next
		case []any:
			idx, err := arrayIndex(tok, len(node))
			if err != nil {
				return nil, fmt.Errorf("%w at %s: %v", errNoValue, p[:i+1], err)
			}
			v = node[idx]
		default:
			return nil, fmt.Errorf("%w at %s: %s is not an object or array", errNoValue, p[:i+1], p[:i])
		}
	}
	return v, nil
}

func arrayIndex(tok string, n int) (int, error) {
	if tok == "" || len(tok) > 1 && tok[0] == '0' || strings.TrimLeft(tok, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not an array index", tok)
	}
	idx, err := strconv.Atoi(tok)
	if err != nil || idx >= n {
		return 0, fmt.Errorf("index %s is out of range (length %d)", tok, n)
	}
	return idx, nil
}

// LookupText returns the value at p as text: a string as is, a number or
// boolean in its JSON form. Objects, arrays and null are errors.
func (p Pointer) LookupText(doc any) (string, error) {
	v, err := p.lookup(doc)
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "", fmt.Errorf("%w at %s: null", errNoValue, p)
	default:
		return "", fmt.Errorf("the value at %s is a JSON %s, not text", p, jsonKind(v))
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
