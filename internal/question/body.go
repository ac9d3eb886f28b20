package question

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
)

// The bounds of what a question's section shows, so that it stays
// readable on a phone whatever the agent asks.
const (
	// MaxDiff is the most of an edit's diff a question shows, in bytes.
	MaxDiff = 3000
	// maxDiffInput is the largest file (before or after the edit) a diff
	// is computed for; a larger one is described by its sizes.
	maxDiffInput = 256 << 10
	// maxWhyShown is the most of what the agent said that is quoted.
	maxWhyShown = 600
	// maxInputShown is the most of a call's input JSON shown.
	maxInputShown = 1500
	// maxCommandShown is the most of a command line shown.
	maxCommandShown = 2000
	// maxURLShown is the most of a URL shown.
	maxURLShown = 500
	// maxName is the most of a tool's or an agent's name shown.
	maxName = 100
	// maxSummary is the most of a command line or URL a Summary shows.
	maxSummary = 120
)

// Ask is what QuestionBody needs to show a question.
type Ask struct {
	// ID is the question's id (NewID).
	ID string
	// Agent is the name of the agent that asks ("claude").
	Agent string
	// Note is the vault-relative, slash-separated path of the note whose
	// run asked.
	Note string
	// Call is the held call.
	Call Call
	// Current is the file the call edits as it is now; nil if it is
	// absent or unknown.
	Current []byte
	// MachineOnly is set when the vault takes answers only from the
	// machine that runs knotd (answers_from: machine): the body then
	// offers no line for the note, and says why.
	MachineOnly bool
}

// QuestionBody returns the body of a question's section in the tie-off:
// what the agent asks to do (for an edit the file and a bounded unified
// diff, for a command its command line, for a fetch the URL, else the
// tool and its input), what it said before asking, and how to answer.
// Everything the agent gave is bounded, and set in code spans or fences
// that none of it can close, so the body stays one well-formed piece of
// Markdown whatever the call holds.
func QuestionBody(a Ask) string {
	c := a.Call
	agent := a.Agent
	if agent == "" {
		agent = "the agent"
	}
	agent = oneLine(cut(agent, maxName))
	var b strings.Builder
	b.WriteString("**")
	b.WriteString(escapeText(agent))
	b.WriteString(" asks to ")
	var detail string
	switch c.Kind {
	case KindEdit:
		switch {
		case c.Path == "":
			b.WriteString("edit a file")
		case c.Outside:
			b.WriteString("edit " + code(c.Path) + ", outside the vault")
		default:
			b.WriteString("edit " + code(c.Path))
		}
		detail = editDetail(a)
	case KindCommand:
		b.WriteString("run a command")
		if c.Command != "" {
			cmd := head(c.Command, maxCommandShown)
			detail = fenced("sh", cmd)
		} else {
			detail = inputDetail(c)
		}
	case KindFetch:
		if c.URL != "" {
			b.WriteString("fetch " + code(cut(c.URL, maxURLShown)))
		} else {
			b.WriteString("reach the network")
			detail = inputDetail(c)
		}
	default:
		b.WriteString("use " + code(cut(c.Tool, maxName)))
		detail = inputDetail(c)
	}
	b.WriteString("**")
	if c.Tool != "" && c.Kind != KindOther && c.Kind != "" {
		b.WriteString(" (" + toolName(c.Tool) + ")")
	}
	b.WriteString("\n\n")
	if why := strings.TrimSpace(c.Why); why != "" {
		b.WriteString(quote(why, maxWhyShown))
		b.WriteString("\n")
	}
	if detail != "" {
		b.WriteString(detail)
		b.WriteString("\n")
	}
	b.WriteString(howToAnswer(a))
	return b.String()
}

// howToAnswer is the closing paragraph of a question: the line to add to
// the note (unless answers come only from the machine) and the commands.
func howToAnswer(a Ask) string {
	id := a.ID
	if !ValidID(id) {
		id = code(cut(id, 2*IDLen)) // never happens with NewID; shown safely
	}
	note := "the note"
	if a.Note != "" {
		note = code(path.Base(a.Note))
	}
	cmds := fmt.Sprintf("`knotd approve %s` or `knotd deny %s --why \"...\"`", id, id)
	var b strings.Builder
	if a.MachineOnly {
		fmt.Fprintf(&b, "To answer, on the machine running knotd: %s, or the buttons of knotd's console. "+
			"This vault takes answers only from that machine (`answers_from: machine`): a `knot_answer` written in %s does nothing.\n", cmds, note)
	} else {
		fmt.Fprintf(&b, "To answer, add this line to the frontmatter of %s (in Obsidian: Properties):\n\n    knot_answer: approve %s\n\n", note, id)
		fmt.Fprintf(&b, "or `knot_answer: deny %s <your reason>`. On the machine running knotd: %s.\n", id, cmds)
	}
	b.WriteString("\nA change to the note's text withdraws this question, and knotd runs the change.\n")
	return b.String()
}

// editDetail shows an edit: the call's own diff (an ACP agent's), else a
// diff computed from the file as it is now and Claude Code's input, else
// the input itself.
func editDetail(a Ask) string {
	c := a.Call
	if c.Diff != "" {
		return fenced("diff", head(c.Diff, MaxDiff))
	}
	before, after, note, ok := editResult(c, a.Current)
	if !ok {
		return inputDetail(c)
	}
	if len(before) > maxDiffInput || len(after) > maxDiffInput {
		return fmt.Sprintf("(too large to show as a diff: %d bytes now, %d bytes after the edit)\n", len(before), len(after))
	}
	p := c.Path
	if p == "" {
		p = "file"
	}
	p = strings.TrimPrefix(p, "/")
	d := udiff.Unified("a/"+p, "b/"+p, before, after)
	var b strings.Builder
	if note != "" {
		b.WriteString(note + "\n\n")
	}
	if d == "" {
		b.WriteString("(the edit changes nothing)\n")
		return b.String()
	}
	b.WriteString(fenced("diff", head(d, MaxDiff)))
	return b.String()
}

// claudeEdit is one replacement of Claude Code's Edit and MultiEdit.
type claudeEdit struct {
	Old string `json:"old_string"`
	New string `json:"new_string"`
	All bool   `json:"replace_all"`
}

// editResult computes the file before and after a Claude Code Write, Edit
// or MultiEdit, from current (nil: absent or unknown); note says what the
// diff shows when it is not the whole change. ok is false for another
// tool or an input it cannot read.
func editResult(c Call, current []byte) (before, after, note string, ok bool) {
	var in struct {
		Content *string `json:"content"`
		claudeEdit
		Edits []claudeEdit `json:"edits"`
	}
	if err := json.Unmarshal(c.Input, &in); err != nil {
		return "", "", "", false
	}
	var edits []claudeEdit
	switch c.Tool {
	case "Write":
		if in.Content == nil {
			return "", "", "", false
		}
		if current == nil {
			note = "(a new file, or one knotd could not read: all of it is shown as added)"
		}
		return string(current), *in.Content, note, true
	case "Edit":
		edits = []claudeEdit{in.claudeEdit}
	case "MultiEdit":
		edits = in.Edits
	default:
		return "", "", "", false
	}
	if len(edits) == 0 {
		return "", "", "", false
	}
	if current != nil {
		after, applied := applyEdits(string(current), edits)
		if applied {
			return string(current), after, "", true
		}
		note = "(the text to replace is not in the file as it is now: the edit would fail; only the replaced text is shown)"
	} else {
		note = "(knotd could not read the file: only the replaced text is shown)"
	}
	var bb, ab strings.Builder
	for i, e := range edits {
		if i > 0 {
			bb.WriteString("…\n")
			ab.WriteString("…\n")
		}
		bb.WriteString(withNewline(e.Old))
		ab.WriteString(withNewline(e.New))
	}
	return bb.String(), ab.String(), note, true
}

// applyEdits applies Claude Code's replacements in order, as Claude Code
// does: each old text must be in the file (once, unless all are replaced).
func applyEdits(s string, edits []claudeEdit) (string, bool) {
	for _, e := range edits {
		switch {
		case e.Old == "":
			if s != "" {
				return "", false
			}
			s = e.New
		case !strings.Contains(s, e.Old):
			return "", false
		case e.All:
			s = strings.ReplaceAll(s, e.Old, e.New)
		case strings.Count(s, e.Old) > 1:
			return "", false
		default:
			s = strings.Replace(s, e.Old, e.New, 1)
		}
		if len(s) > maxDiffInput {
			return s, true
		}
	}
	return s, true
}

func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// inputDetail shows a call by its tool and input: the input's JSON,
// indented, bounded, in a fence.
func inputDetail(c Call) string {
	in := Canonical(c.Input)
	if len(in) == 0 {
		return ""
	}
	var ind bytes.Buffer
	if json.Indent(&ind, in, "", "  ") == nil {
		in = ind.Bytes()
	}
	s := strings.ToValidUTF8(string(in), "\uFFFD")
	return fenced("json", head(s, maxInputShown))
}

// AnswerBody returns the body of an answer's section in the tie-off: the
// verdict, the question and its call, who answered from where and when,
// the reason, and next: what happens now ("knotd continues the run").
func AnswerBody(a Answer, c Call, next string) string {
	var b strings.Builder
	b.WriteString("**" + capitalise(verdictWord(a.Verdict)) + "**")
	if ValidID(a.ID) {
		b.WriteString(" " + a.ID)
	}
	b.WriteString(": " + escapeText(Summary(c)) + ", " + from(a))
	if !a.At.IsZero() {
		b.WriteString(", at " + a.At.UTC().Format(time.DateTime) + " UTC")
	}
	b.WriteString(".\n")
	if why := strings.TrimSpace(a.Why); why != "" {
		b.WriteString("\n")
		b.WriteString(quote(why, MaxWhy))
	}
	if next = strings.TrimSpace(next); next != "" {
		b.WriteString("\n" + next + "\n")
	}
	return b.String()
}

// from says who answered, from where.
func from(a Answer) string {
	switch a.From {
	case FromNote:
		return "from the note (knot_answer)"
	case FromCommand:
		verb := string(a.Verdict)
		if verdictWord(a.Verdict) == "" {
			verb = "approve|deny|withdraw"
		}
		return "with `knotd " + verb + "` on the machine running knotd"
	case FromConsole:
		return "in knotd's console"
	case FromKnotd:
		return "by knotd"
	case "":
		return "from an unknown place"
	}
	return "from " + code(cut(string(a.From), maxName))
}

// verdictWord is how a section and a context line say a verdict.
func verdictWord(v Verdict) string {
	switch v {
	case Approve:
		return "approved"
	case Deny:
		return "denied"
	case Withdraw:
		return "withdrawn"
	}
	return ""
}

// ContextLine returns the line of a prompt's Event Context that tells the
// agent a question's answer: "3f9a2c1b approved (edit notes/plan.md)",
// "3f9a2c1b denied (run \"rm -rf x\"): too risky". One line, bounded.
func ContextLine(a Answer, c Call) string {
	v := verdictWord(a.Verdict)
	if v == "" {
		v = strconv.Quote(cut(string(a.Verdict), maxName))
	}
	id := a.ID
	if !ValidID(id) {
		id = strconv.Quote(cut(id, 2*IDLen))
	}
	s := id + " " + v + " (" + Summary(c) + ")"
	if why := strings.TrimSpace(a.Why); why != "" {
		s += ": " + strings.Join(strings.Fields(cut(why, MaxWhy)), " ")
	}
	return s
}

// Summary says in one short line what a call does: "edit notes/plan.md",
// "run \"git push\"", "fetch https://example.com/x", "use mcp__x__y".
// Command lines and names are quoted when they hold spaces or control
// characters; long ones are cut.
func Summary(c Call) string {
	switch c.Kind {
	case KindEdit:
		if c.Path == "" {
			return "edit a file"
		}
		s := "edit " + displayName(cut(c.Path, maxSummary*2))
		if c.Outside {
			s += " (outside the vault)"
		}
		return s
	case KindCommand:
		if c.Command != "" {
			return "run " + strconv.Quote(cut(c.Command, maxSummary))
		}
	case KindFetch:
		if c.URL != "" {
			return "fetch " + displayName(cut(c.URL, maxSummary))
		}
	}
	if c.Tool == "" {
		return "use a tool"
	}
	return "use " + displayName(cut(c.Tool, maxName))
}

// displayName is s as it is, or quoted when it holds a space, a quote or
// a control character (a newline must not forge a line of a prompt).
func displayName(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) || r == '"' }) >= 0 || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	return s
}

// simpleName matches a tool name shown as it is.
var simpleName = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// toolName shows a tool's name after the question's first line: as it is
// when it is a plain name, else in a code span.
func toolName(t string) string {
	if simpleName.MatchString(t) {
		return t
	}
	return code(cut(t, maxName))
}

// code returns s as an inline code span that nothing in s can close: a
// run of backticks longer than any in s, padded with spaces when s starts
// or ends with a backtick or a space. Control characters are written
// quoted (a newline would split the line).
func code(s string) string {
	s = oneLine(s)
	if s == "" {
		return "` `"
	}
	delim := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		s = " " + s + " "
	}
	return delim + s + delim
}

// oneLine returns s with invalid UTF-8 replaced, and quoted when it holds
// a control character.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// escapeText escapes the characters that would make s Markdown outside a
// code span (emphasis, links, HTML), for a name in running text.
func escapeText(s string) string {
	s = oneLine(s)
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>!#|~&", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func capitalise(s string) string {
	if s == "" {
		return "Answered"
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// longestRun returns the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] != c {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}

// fenced returns body in a backtick fence with the info string info, the
// fence longer than any run of backticks in body, so nothing in it can
// close the fence. body is made valid UTF-8 and ends with a newline.
func fenced(info, body string) string {
	body = strings.ToValidUTF8(body, "\uFFFD")
	f := strings.Repeat("`", max(3, longestRun(body, '`')+1))
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return f + info + "\n" + body + f + "\n"
}

// quote returns s, bounded to limit bytes, as a block quote: every line
// starts with ">", so the quote ends (and closes whatever s opened in it)
// at the blank line that follows it. Control characters other than tab
// and newline are dropped.
func quote(s string, limit int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\r\n", "\n")
	s = strings.Map(func(r rune) rune {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	s = strings.TrimRight(head(s, limit), "\n")
	var b strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(line) == "" {
			b.WriteString(">\n")
			continue
		}
		b.WriteString("> " + line + "\n")
	}
	return b.String()
}

// cut returns s cut to at most limit bytes at a rune boundary, with "…"
// when it was cut.
func cut(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	i := limit
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// head keeps about the first limit bytes of s, cut after a line where one
// ends in the second half, else at a rune boundary, and says how much was
// left out.
func head(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	i := limit
	if nl := strings.LastIndexByte(s[:i], '\n'); nl >= 0 && nl+1 > i/2 {
		i = nl + 1
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	h := s[:i]
	if h != "" && !strings.HasSuffix(h, "\n") {
		h += "\n"
	}
	return h + fmt.Sprintf("[… %d bytes omitted …]\n", len(s)-i)
}
