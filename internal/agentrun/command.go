package agentrun

import (
	"errors"
	"fmt"
	"strings"

	"github.com/knotd/knotd/internal/agentrun/internal/argtemplate"
	"github.com/knotd/knotd/internal/agentrun/internal/jsonpointer"
	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/transcript"
)

// MaxArgPrompt is the largest prompt, in bytes, that prompt: arg passes as
// one argument (Linux refuses a single argument of 128 KiB or more).
const MaxArgPrompt = 128<<10 - 1

// commandDriver runs a generic command from the configuration: its argv
// template, its prompt mode and its output format (see Agent).
type commandDriver struct{ agent *Agent }

func (d *commandDriver) delivery() PromptMode {
	if d.agent.Prompt == "" {
		return PromptStdin
	}
	return d.agent.Prompt
}

func (d *commandDriver) inlineInstructions() bool { return true }
func (d *commandDriver) resumes() bool            { return len(d.agent.ResumeCommand) > 0 }
func (d *commandDriver) defaultProgram() string   { return "" }
func (d *commandDriver) limits() Limits           { return Limits{} }

// continues reports that the command keeps its conversation under the
// strand's session ({session}), with no resume_command, and that the
// session has had a turn that went through (Request.SessionAnswered): it
// continues that conversation.
func (d *commandDriver) continues(req *Request) bool {
	return len(d.agent.ResumeCommand) == 0 && d.agent.KeepsConversation() && req.SessionAnswered
}

func (d *commandDriver) argv(a *attempt) ([]string, error) {
	tmpl := d.agent.Command
	if a.resume != "" {
		tmpl = d.agent.ResumeCommand
	}
	ev := a.req.Event
	vals := map[string]string{
		"session": a.req.Session,
		"vault":   a.req.Vault,
		"strand":  ev.Strand.Path,
		"event":   ev.Type.String(),
		"run_id":  a.req.RunID,
	}
	if a.model != "" {
		vals["model"] = a.model
	}
	if a.resume != "" {
		vals["resume"] = a.resume
	}
	switch d.delivery() {
	case PromptArg:
		if strings.ContainsRune(a.prompt, 0) {
			return nil, errors.New("the prompt contains a NUL byte, which cannot be passed as an argument; use prompt: stdin")
		}
		vals["prompt"] = a.prompt
		tmpl = withPlaceholder(tmpl, "{prompt}")
	case PromptFile:
		vals["prompt_file"] = a.promptFile
		tmpl = withPlaceholder(tmpl, "{prompt_file}")
	}
	argv, err := argtemplate.Expand(tmpl, vals)
	if err != nil {
		return nil, err
	}
	for i, el := range argv {
		if len(el) > MaxArgPrompt {
			return nil, fmt.Errorf("argument %d is %d bytes, more than one argument may hold (%d); use prompt: stdin or file", i, len(el), MaxArgPrompt)
		}
	}
	return argv, nil
}

// withPlaceholder returns tmpl with ph appended as the last element unless
// an element already uses it.
func withPlaceholder(tmpl []string, ph string) []string {
	for _, el := range tmpl {
		if strings.Contains(el, ph) {
			return tmpl
		}
	}
	return append(append([]string(nil), tmpl...), ph)
}

func (d *commandDriver) parser() outputParser {
	if d.agent.Output != OutputJSON {
		return textParser{}
	}
	// Validate has checked both pointers.
	reply, _ := jsonpointer.Parse(d.agent.Reply)
	var session jsonpointer.Pointer
	if d.agent.Session != "" {
		session, _ = jsonpointer.Parse(d.agent.Session)
	}
	return jsonParser{reply: reply, session: session}
}

// textParser takes all of standard output as the reply (kit.TextParser),
// handed to Request.OnOutput as it comes (rawParser).
type textParser struct{}

func (textParser) finish(stdout []byte, truncated bool, stderr string) (parsed, error) {
	p, err := kit.TextParser{}.Finish(stdout, truncated, stderr)
	return fromKit(p), err
}

// textMessage is text as a transcript message of one text-only block.
func textMessage(text string, truncated bool) *transcript.AssistantMessage {
	return kit.TextMessage(text, truncated)
}

// jsonParser reads output json: one JSON document or JSON lines, the reply
// and the handle taken from the last document that has them.
type jsonParser struct {
	reply, session jsonpointer.Pointer // session nil: no handle
}

func (p jsonParser) finish(stdout []byte, truncated bool, _ string) (parsed, error) {
	var out parsed
	var docs int
	var replyErr error
	skipped := jsonValues(stdout, func(v any) {
		docs++
		if r, err := p.reply.LookupText(v); err == nil {
			out.reply, replyErr = r, nil
		} else if out.reply == "" {
			replyErr = err
		}
		if p.session != nil {
			if h, err := p.session.LookupText(v); err == nil && h != "" {
				out.handle = h
			}
		}
	})
	switch {
	case docs == 0 && len(strings.TrimSpace(string(stdout))) == 0:
		return parsed{}, errNoOutput
	case docs == 0:
		return parsed{}, errors.New("the output is not JSON")
	case out.reply == "" && replyErr != nil:
		return out, fmt.Errorf("no reply at %s: %w", p.reply, replyErr)
	}
	if skipped > 0 {
		out.notes = append(out.notes, fmt.Sprintf("skipped %d lines of output that are not JSON", skipped))
	}
	if truncated {
		out.notes = append(out.notes, "the output was cut at the standard output limit")
	}
	out.message = textMessage(out.reply, false)
	return out, nil
}

// TemplateNames returns the names of the values a generic command may use
// in braces ({model}, {session}, ...): see argtemplate.
func TemplateNames() []string { return argtemplate.Names() }

// OtherPlaceholders returns the words in braces in argv that name no
// template value ({sesion}), once each, in order: they are left as they
// are, which for a mistyped name is a mistake to report.
func OtherPlaceholders(argv []string) []string { return argtemplate.OtherPlaceholders(argv) }
