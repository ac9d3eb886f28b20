// Package textbound cuts text to a size for agentrun's prompts: at line
// ends and rune boundaries where it can, with a marker line saying how
// much was left out, and fences it so that none of it can close the
// fence.
package textbound

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// omittedBytes is the marker line that replaces n bytes left out of a part
// of the prompt.
func omittedBytes(n int) string {
	return "[… " + plural(n, "byte") + " omitted …]\n"
}

// OmittedSections is the marker line for n older tie-off sections left out.
func OmittedSections(n int) string {
	return "[… " + strconv.Itoa(n) + " older " + pluralWord(n, "section") + " omitted …]\n"
}

func plural(n int, word string) string { return strconv.Itoa(n) + " " + pluralWord(n, word) }

func pluralWord(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Fence returns a backtick fence that none of the texts can close: three
// backticks, or one more than the longest run of backticks in any of them.
// (A closing fence must use the same character and be at least as long as
// the opening one; a tilde line cannot close it.)
func Fence(texts ...string) string {
	longest := 0
	for _, s := range texts {
		run := 0
		for i := 0; i < len(s); i++ {
			if s[i] != '`' {
				run = 0
				continue
			}
			run++
			longest = max(longest, run)
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// Fenced returns body inside a fence with the given info string. body is
// ended with a newline if it lacks one.
func Fenced(info, body string) string {
	f := Fence(body)
	var b strings.Builder
	b.Grow(len(body) + 2*len(f) + len(info) + 3)
	b.WriteString(f)
	b.WriteString(info)
	b.WriteByte('\n')
	b.WriteString(body)
	if body != "" && !strings.HasSuffix(body, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(f)
	b.WriteByte('\n')
	return b.String()
}

// CutBack returns the largest cut point <= i that lies on a rune boundary
// of s, preferring the byte after the last newline at or before i when
// there is one in the second half of [0, i).
func CutBack(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	if nl := strings.LastIndexByte(s[:i], '\n'); nl >= 0 && nl+1 > i/2 {
		return nl + 1
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// cutForward returns the smallest cut point >= i on a rune boundary of s,
// preferring the byte after the first newline at or after i when there is
// one within (len(s)-i)/2 bytes.
func cutForward(s string, i int) int {
	if i <= 0 {
		return 0
	}
	if i >= len(s) || s[i-1] == '\n' {
		return min(i, len(s))
	}
	if nl := strings.IndexByte(s[i:], '\n'); nl >= 0 && nl < (len(s)-i)/2 {
		return i + nl + 1
	}
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// Head keeps about the first max bytes of s, cut at a line end where
// possible, and replaces the rest with a marker line.
func Head(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := CutBack(s, max)
	head := s[:cut]
	if !strings.HasSuffix(head, "\n") && head != "" {
		head += "\n"
	}
	return head + omittedBytes(len(s)-cut)
}

// Middle keeps about the first and the last max/2 bytes of s, cut at
// line ends where possible, with a marker line between them.
func Middle(s string, max int) string {
	if len(s) <= max {
		return s
	}
	h := CutBack(s, max/2)
	t := cutForward(s, len(s)-max/2)
	if t < h {
		t = h
	}
	head := s[:h]
	if !strings.HasSuffix(head, "\n") && head != "" {
		head += "\n"
	}
	return head + omittedBytes(t-h) + s[t:]
}
