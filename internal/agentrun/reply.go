package agentrun

import "github.com/knotd/knotd/internal/agents/kit"

// cleanReply makes a reply fit for a tie-off: valid UTF-8, no leading blank
// lines, no trailing white space. The text is otherwise unchanged.
func cleanReply(s string) string { return kit.CleanReply(s) }

// firstLine returns the first non-blank line of s without terminal escapes
// or control characters, trimmed and cut to max bytes, for a one-line human
// reason.
func firstLine(s string, max int) string { return kit.FirstLine(s, max) }
