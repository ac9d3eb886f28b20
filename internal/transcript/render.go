package transcript

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Render writes events for people, as `knotd runs show` prints a run: one
// heading per event ([seq] type time), then its fields, with texts (prompt,
// replies, tool output, stderr) indented behind "| ". Terminal control
// characters in texts are shown escaped (\x1b), never sent to the
// terminal. An event of an unknown type, or whose payload cannot be
// decoded, is shown with its raw payload.
func Render(w io.Writer, events []Event) error {
	bw := bufio.NewWriter(w)
	p := printer{w: bw}
	for i, ev := range events {
		if i > 0 {
			p.line("")
		}
		p.line("[%d] %s %s", ev.Seq, ev.Type, ev.Time.UTC().Format(time.RFC3339Nano))
		pl, err := ev.Payload()
		if errors.Is(err, ErrUnknownType) {
			p.field("remark", "an event type this version of knotd does not know")
			p.text("data", string(ev.Data))
			continue
		}
		if err != nil {
			p.field("problem", err.Error())
			p.text("data", string(ev.Data))
			continue
		}
		switch v := pl.(type) {
		case Started:
			p.started(ev.RunID, v)
		case UserMessage:
			p.text(fmt.Sprintf("prompt (%d bytes)", len(v.Prompt)), v.Prompt)
		case AssistantMessage:
			p.assistant(v)
		case Finished:
			p.finished(v)
		case TieOff:
			how := "appended"
			if v.Replaced {
				how = "replaced"
			}
			p.field("section", fmt.Sprintf("%s at byte %d (%s)", v.Path, v.Offset, how))
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("transcript: render: %w", err)
	}
	return nil
}

type printer struct{ w *bufio.Writer }

func (p printer) line(format string, args ...any) {
	fmt.Fprintf(p.w, format, args...) // bufio.Writer keeps the first error for Flush
	p.w.WriteByte('\n')
}

func (p printer) field(name, value string) {
	if value != "" {
		p.line("    %-9s %s", name, sanitize(value))
	}
}

// text prints a titled multi-line text, each line behind "| ".
func (p printer) text(title, s string) {
	p.line("    %s:", title)
	if s == "" {
		p.line("      (empty)")
		return
	}
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if l == "" {
			p.line("      |")
			continue
		}
		p.line("      | %s", sanitize(l))
	}
}

func (p printer) started(runID string, s Started) {
	p.field("run", runID)
	p.field("note", fmt.Sprintf("%s (%s)", s.Strand, s.Event))
	var agent []string
	if s.Preset != "" {
		agent = append(agent, "preset "+s.Preset)
	}
	if s.Model != "" {
		agent = append(agent, "model "+s.Model)
	}
	if len(agent) > 0 {
		p.field("agent", s.Agent+" ("+strings.Join(agent, ", ")+")")
	} else {
		p.field("agent", s.Agent)
	}
	switch {
	case s.Session != "" && s.Resume != "":
		p.field("session", s.Session+", resuming "+s.Resume)
	case s.Session != "":
		p.field("session", s.Session+", new conversation")
	}
	if s.Turn > 0 {
		p.field("turn", strconv.Itoa(s.Turn))
	}
	p.field("fired by", s.FiredBy)
	if len(s.Argv) > 0 {
		q := make([]string, len(s.Argv))
		for i, a := range s.Argv {
			q[i] = shellWord(a)
		}
		p.field("argv", strings.Join(q, " "))
	}
}

func (p printer) assistant(a AssistantMessage) {
	p.field("format", string(a.Format))
	if a.Truncated {
		p.field("remark", "the output was cut: later blocks are missing")
	}
	for _, n := range a.Notes {
		p.field("remark", n)
	}
	if len(a.Blocks) == 0 {
		p.field("blocks", "none")
	}
	for _, b := range a.Blocks {
		fid := " [" + string(b.Fidelity) + "]"
		switch b.Type {
		case BlockText, BlockThinking:
			p.text(string(b.Type)+fid, b.Text)
		case BlockToolUse:
			p.line("    tool_use %s %s%s", sanitize(b.ID), sanitize(b.Name), fid)
			p.text("input", string(b.Input))
		case BlockToolResult:
			title := "tool_result " + sanitize(b.ToolUseID)
			if b.IsError {
				title += " (error)"
			}
			p.text(title+fid, b.Content)
		default:
			p.text(string(b.Type)+fid, b.Text)
		}
	}
}

func (p printer) finished(f Finished) {
	out := f.Outcome
	if f.ExitCode >= 0 {
		out += fmt.Sprintf(", exit status %d", f.ExitCode)
	}
	p.field("outcome", fmt.Sprintf("%s, after %v", out, f.Duration.Round(time.Millisecond)))
	p.field("reason", f.Reason)
	p.field("resume", f.Resume)
	if u := f.Usage; u != nil {
		s := fmt.Sprintf("%d in, %d out, %d cache read, %d cache write", u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
		if u.CostUSD > 0 {
			s += fmt.Sprintf(", $%.4f", u.CostUSD)
		}
		p.field("usage", s)
	}
	if f.StdoutBytes > 0 {
		s := fmt.Sprintf("%d bytes", f.StdoutBytes)
		if f.StdoutTruncated {
			s += " (only the beginning was kept)"
		}
		p.field("stdout", s)
	}
	for _, n := range f.Notes {
		p.field("remark", n)
	}
	if f.Stderr != "" {
		title := "stderr"
		if f.StderrTruncated {
			title += " (tail)"
		}
		p.text(title, f.Stderr)
	}
}

// shellWord quotes an argv element when it is empty or holds anything but
// plain characters, for display only (knotd never uses a shell).
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./=:,@%+[]", r)))
	}) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// sanitize escapes control characters other than tab, and the
// bidirectional controls that reorder text, so text from an agent can
// neither drive the terminal nor disguise itself.
func sanitize(s string) string {
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isControl(r rune) bool {
	return r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r))
}
