package tieoff

import (
	"bytes"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// NoExitStatus is Failure.ExitStatus for a run whose agent did not exit by
// itself: it was killed, timed out, or never started.
const NoExitStatus = -1

// Limits on the stderr tail that Failure.Body shows.
const (
	maxStderrLines = 20
	maxStderrBytes = 2048
)

// Failure describes a failed run. Its Body is the body of the run's
// section (with Section.Failed set), so that callers never format failure
// reports by hand.
type Failure struct {
	// What says what failed, in one line: "agent claude timed out after
	// 10m0s", "agent mytool exited with status 2". Line breaks are joined.
	What string
	// ExitStatus is the agent's exit status, or NoExitStatus.
	ExitStatus int
	// NotStarted reports that the agent's process was never started
	// (What says why): it has no exit status to report.
	NotStarted bool
	// Duration is how long the run took.
	Duration time.Duration
	// Stderr is what the agent wrote to standard error (or its tail); Body
	// shows at most its last maxStderrLines lines and maxStderrBytes bytes.
	Stderr string
}

// Body renders the failure as Markdown:
//
//	**Run failed:** agent claude exited with status 2
//
//	- Exit status: 2
//	- Duration: 1.5s
//
//	Last 2 lines of stderr:
//
//	```
//	error: no API key
//	see --help
//	```
//
// Terminal escape sequences and other control characters are removed from
// stderr, a carriage return keeps only what a terminal would show after it,
// and bytes that are not UTF-8 become U+FFFD.
func (f Failure) Body() string {
	var b strings.Builder
	what := strings.Join(strings.Fields(f.What), " ")
	if what == "" {
		what = "the agent run failed"
	}
	fmt.Fprintf(&b, "**Run failed:** %s\n\n", what)
	switch {
	case f.NotStarted:
		b.WriteString("- Exit status: none (the agent could not be started)\n")
	case f.ExitStatus < 0:
		b.WriteString("- Exit status: none (the agent did not exit by itself)\n")
	default:
		fmt.Fprintf(&b, "- Exit status: %d\n", f.ExitStatus)
	}
	fmt.Fprintf(&b, "- Duration: %s\n\n", roundDuration(f.Duration))
	lines, total := stderrTail(f.Stderr)
	switch {
	case total == 0:
		b.WriteString("Nothing on stderr.\n")
		return b.String()
	case len(lines) == total:
		fmt.Fprintf(&b, "Stderr (%s):\n\n", plural(total, "line"))
	default:
		fmt.Fprintf(&b, "Last %s of stderr (%d earlier left out):\n\n", plural(len(lines), "line"), total-len(lines))
	}
	tail := strings.Join(lines, "\n") + "\n"
	fenceStr := strings.Repeat("`", max(3, longestRun(tail, '`')+1))
	b.WriteString(fenceStr + "\n" + tail + fenceStr + "\n")
	return b.String()
}

func roundDuration(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// stderrTail cleans stderr and returns its last lines within the limits,
// and how many non-empty-trailing lines it had in all.
func stderrTail(s string) (lines []string, total int) {
	all := strings.Split(strings.TrimRight(cleanTerminal(s), "\n"), "\n")
	if len(all) == 1 && strings.TrimSpace(all[0]) == "" {
		return nil, 0
	}
	size := 0
	for i := len(all) - 1; i >= 0 && len(lines) < maxStderrLines; i-- {
		l := all[i]
		if size+len(l)+1 > maxStderrBytes {
			if len(lines) > 0 {
				break
			}
			// A single huge last line: keep its end, cut at a rune start.
			cut := len(l) - maxStderrBytes + 1
			for cut < len(l) && !utf8.RuneStart(l[cut]) {
				cut++
			}
			l = "…" + l[cut:]
		}
		size += len(l) + 1
		lines = append(lines, l)
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return lines, len(all)
}

// cleanTerminal removes ANSI escape sequences and control characters other
// than tab and newline, keeps only the text after the last carriage return
// of each line, and makes the text valid UTF-8.
func cleanTerminal(s string) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\r\n", "\n"), "\uFFFD")
	var b bytes.Buffer
	lineStart := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n':
			b.WriteByte(c)
			lineStart = b.Len()
		case c == '\r':
			b.Truncate(lineStart)
		case c == 0x1b:
			i = skipEscape(s, i)
		case c == '\t':
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// skipEscape returns the index of the last byte of the escape sequence
// that starts at s[i] (an ESC).
func skipEscape(s string, i int) int {
	if i+1 >= len(s) {
		return i
	}
	switch s[i+1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40-0x7e
		j := i + 2
		for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
			j++
		}
		return min(j, len(s)-1)
	case ']': // OSC: up to BEL or ESC \
		for j := i + 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 1
			}
		}
		return len(s) - 1
	}
	return i + 1
}

// longestRun returns the length of the longest run of c in s.
func longestRun[T string | []byte](s T, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
