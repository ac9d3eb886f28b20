package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// Bounds of what a page reads.
const (
	// maxNotes is the most notes the overview lists.
	maxNotes = 2000
	// maxTieOff is how much of a tie-off's end a note page shows.
	maxTieOff = 1 << 20
	// maxTranscript is the largest transcript a run page reads whole.
	maxTranscript = 32 << 20
	// maxText is the longest text of an event a page shows.
	maxText = 256 << 10
)

// eventView is one transcript event, for a page.
type eventView struct {
	Seq    int64
	Type   string
	Class  string // the type with '.' as '-': "run-finished"
	Time   string
	Fields []field
	Texts  []textView
}

type field struct{ Name, Value string }

// textView is a text of an event; Open shows it unfolded.
type textView struct {
	Title, Body string
	Kind        string
	Open        bool
}

// viewEvent makes the view of ev.
func viewEvent(ev transcript.Event) eventView {
	v := eventView{Seq: ev.Seq, Type: string(ev.Type), Class: strings.ReplaceAll(string(ev.Type), ".", "-"),
		Time: ev.Time.UTC().Format("2006-01-02 15:04:05 UTC")}
	add := func(name, value string) {
		if value != "" {
			v.Fields = append(v.Fields, field{name, value})
		}
	}
	text := func(title, body, kind string, open bool) {
		if len(body) > maxText {
			body = body[:maxText] + "\n… (cut: " + strconv.Itoa(len(body)) + " bytes in all; knotd runs show has it whole)"
		}
		v.Texts = append(v.Texts, textView{title, body, kind, open})
	}
	pl, err := ev.Payload()
	if err != nil {
		add("note", err.Error())
		text("data", string(ev.Data), "raw", false)
		return v
	}
	switch p := pl.(type) {
	case transcript.Started:
		add("note", p.Strand)
		add("event", p.Event.String())
		add("agent", p.Agent)
		add("preset", p.Preset)
		add("model", p.Model)
		add("fired by", p.FiredBy)
		if p.Turn > 0 {
			add("turn", strconv.Itoa(p.Turn))
		}
		add("argv", strings.Join(p.Argv, " "))
	case transcript.UserMessage:
		text(fmt.Sprintf("prompt (%d bytes)", len(p.Prompt)), p.Prompt, "prompt", false)
	case transcript.AssistantMessage:
		add("format", string(p.Format))
		if p.Truncated {
			add("note", "the output was cut: later blocks are missing")
		}
		for _, n := range p.Notes {
			add("note", n)
		}
		for _, b := range p.Blocks {
			switch b.Type {
			case transcript.BlockToolUse:
				text("tool_use "+b.Name, string(b.Input), "tool", false)
			case transcript.BlockToolResult:
				title := "tool_result"
				if b.IsError {
					title += " (error)"
				}
				text(title, b.Content, "tool", false)
			case transcript.BlockThinking:
				text("thinking", b.Text, "thinking", true)
			default:
				text(string(b.Type), b.Text, "text", true)
			}
		}
	case transcript.Finished:
		out := p.Outcome
		if p.ExitCode >= 0 {
			out += fmt.Sprintf(", exit status %d", p.ExitCode)
		}
		add("outcome", out)
		add("duration", p.Duration.Round(time.Millisecond).String())
		add("reason", p.Reason)
		add("cost", costOf(p.Usage))
		for _, n := range p.Notes {
			add("note", n)
		}
		if p.Stderr != "" {
			text("stderr", p.Stderr, "stderr", p.Outcome != "ok")
		}
	case transcript.TieOff:
		add("tie-off", fmt.Sprintf("%s, at byte %d", p.Path, p.Offset))
	}
	return v
}

// costOf says what a run cost as its CLI reported it: dollars when it
// reported them, else its tokens; never a price knotd made up.
func costOf(u *transcript.Usage) string {
	switch {
	case u == nil:
		return ""
	case u.CostUSD > 0:
		return fmt.Sprintf("$%.4f", u.CostUSD)
	case u.InputTokens+u.OutputTokens > 0:
		return fmt.Sprintf("%d tokens in, %d out", u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.OutputTokens)
	}
	return ""
}

// runView is one run in a list.
type runView struct {
	ID, Note, Event, Agent, Time, Outcome, Cost, Reason string
	Running                                             bool
}

func viewRun(s transcript.Summary) runView {
	v := runView{ID: s.RunID, Note: s.Strand, Agent: s.Agent, Time: s.Time.UTC().Format("2006-01-02 15:04:05"),
		Outcome: s.Outcome, Cost: costOf(s.Usage), Reason: firstLine(s.Reason)}
	if s.Event.Valid() {
		v.Event = s.Event.String()
	}
	if !s.Finished {
		v.Outcome = "in progress"
		v.Running = true
		if s.Problem != "" {
			v.Outcome = "unreadable: " + s.Problem
		}
	}
	return v
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// noteView is a note of the overview's list.
type noteView struct {
	Path   string
	Last   *runView
	Paused bool
	Gone   bool   // runs but no file (deleted)
	Off    string // why the rules keep it from every agent
}

// listNotes lists the vault's notes (those its ignore files leave), at
// most maxNotes, with their last runs, newest run first, then the notes
// that never ran.
func listNotes(root string, rules *ignore.Rules, runs []transcript.Summary) (notes []noteView, more bool, err error) {
	var found []string
	werr := rules.Walk(root, "", ignore.WalkOptions{}, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable folder or ignore file: list the rest
		}
		if d.IsDir() {
			return nil
		}
		if d.Type().IsRegular() && strand.IsStrandPath(rel) {
			if len(found) == maxNotes {
				more = true
				return fs.SkipAll
			}
			found = append(found, rel)
		}
		return nil
	})
	if werr != nil {
		return nil, false, fmt.Errorf("console: list the notes: %w", werr)
	}
	last := make(map[string]runView)
	var order []string
	for _, s := range runs { // newest first
		if s.Strand == "" {
			continue
		}
		if _, ok := last[s.Strand]; !ok {
			last[s.Strand] = viewRun(s)
			order = append(order, s.Strand)
		}
	}
	exists := make(map[string]bool, len(found))
	for _, n := range found {
		exists[n] = true
	}
	for _, n := range order {
		r := last[n]
		notes = append(notes, noteView{Path: n, Last: &r, Gone: !exists[n]})
	}
	for _, n := range found {
		if _, ok := last[n]; !ok {
			notes = append(notes, noteView{Path: n})
		}
	}
	return notes, more, nil
}

// sectionView is a section of a tie-off, its reply rendered.
type sectionView struct {
	Event, Time, RunID string
	Failed, Paused     bool
	// Status is a question's or an answer's: "question", "approved",
	// "denied" or "withdrawn"; "" for a run's section.
	Status string
	HTML   template.HTML
}

// tieOffView is a note's tie-off as a page shows it.
type tieOffView struct {
	Path     string
	Missing  bool
	Cut      bool // older sections left out
	Sections []sectionView
	Problems []string
}

// markdown renders replies. Raw HTML in them is left out (goldmark's
// default: html.WithUnsafe is not set) and so are links to dangerous URLs
// such as javascript:.
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// readTieOff reads the newest sections of note's tie-off (at most
// maxTieOff bytes of its end) and renders their replies.
func readTieOff(root *os.Root, note string) (tieOffView, error) {
	name, err := strand.TieOffPath(note)
	if err != nil {
		return tieOffView{}, fmt.Errorf("console: %w", err)
	}
	v := tieOffView{Path: name}
	win, err := tieoff.Tail(root, name, 0, maxTieOff)
	if errors.Is(err, fs.ErrNotExist) {
		v.Missing = true
		return v, nil
	}
	if err != nil {
		return v, fmt.Errorf("console: %w", err)
	}
	v.Cut = win.Start > 0
	for _, p := range win.Problems {
		v.Problems = append(v.Problems, p.Error())
	}
	for _, s := range slices.Backward(win.Sections) { // newest first
		var buf bytes.Buffer
		if err := markdown.Convert([]byte(s.Body), &buf); err != nil {
			return v, fmt.Errorf("console: render %s: %w", name, err)
		}
		v.Sections = append(v.Sections, sectionView{
			Event: s.Event.String(), Time: s.Time.UTC().Format("2006-01-02 15:04:05 UTC"), RunID: s.RunID, Failed: s.Failed, Paused: s.Paused,
			Status: sectionStatus(s),
			HTML:   template.HTML(buf.String()), // goldmark's output, raw HTML left out
		})
	}
	return v, nil
}

// sectionStatus is the Status a question or an answer section shows, ""
// for a run's.
func sectionStatus(s tieoff.Section) string {
	if s.Asked {
		return "question"
	}
	return map[string]string{"approve": "approved", "deny": "denied", "withdraw": "withdrawn"}[s.Verdict]
}
