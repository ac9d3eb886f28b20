package agentrun

import (
	"time"

	"github.com/knotd/knotd/internal/agentrun/internal/prompt"
	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/question"
)

// Limits bounds the parts of a prompt so that its size does not grow with
// the strand's history. Fields that are zero or negative take the defaults
// of DefaultLimits (the tie-off ones may be raised by a preset with no
// conversation memory, such as ollama).
type Limits = kit.Limits

// DefaultLimits returns the limits used where a Runner sets none.
func DefaultLimits() Limits {
	return Limits{Content: 256 << 10, Diff: 64 << 10, TieOffSections: 5, TieOffBytes: 32 << 10, Prompt: 512 << 10}
}

// withDefaults fills l's zero fields from the preset's defaults, then from
// DefaultLimits.
func withDefaults(l, preset Limits) Limits {
	def := DefaultLimits()
	pick := func(v, p, d int) int {
		switch {
		case v > 0:
			return v
		case p > 0:
			return p
		}
		return d
	}
	return Limits{
		Content:        pick(l.Content, preset.Content, def.Content),
		Diff:           pick(l.Diff, preset.Diff, def.Diff),
		TieOffSections: pick(l.TieOffSections, preset.TieOffSections, def.TieOffSections),
		TieOffBytes:    pick(l.TieOffBytes, preset.TieOffBytes, def.TieOffBytes),
		Prompt:         pick(l.Prompt, preset.Prompt, def.Prompt),
	}
}

// Occurrence is what a Scheduled run stands for: the schedule that fired
// and the occurrences that fell due (Request.Schedule).
type Occurrence = prompt.Occurrence

// ErrPromptTooLarge is returned when a prompt exceeds Limits.Prompt even
// though each of its parts is bounded: the limits or the instructions need
// changing.
var ErrPromptTooLarge = prompt.ErrTooLarge

// sessionState is what the Session line says.
type sessionState struct {
	resumed bool
	restart *Restart
}

// promptSpec is everything the prompt is built from.
type promptSpec struct {
	req          *Request
	now          time.Time
	session      sessionState
	instructions string // written before the Event Context ("" when the CLI takes them as a flag)
	limits       Limits // complete (withDefaults applied)
	// continuing is set when the turn continues the conversation that
	// answered req.Previous: it is given the change, not what the
	// conversation holds (the note, the tie-off's sections).
	continuing bool
	// fresh says why the turn starts a new conversation instead of
	// continuing a full one ("" when it does not).
	fresh string
}

// describe is the parenthesised part of the Session line.
func (s sessionState) describe() string {
	switch {
	case s.restart != nil:
		return "new; conversation " + s.restart.Handle + " could not be continued: " + s.restart.Reason
	case s.resumed:
		return "resumed"
	}
	return "new"
}

// buildPrompt returns the prompt text: instructions (when inline), the Event
// Context block, a blank line and the original prompt (see prompt.Build).
func buildPrompt(s promptSpec) (string, error) {
	req := s.req
	var answers []question.Answer
	if req.Continuing {
		answers = req.Answers
	}
	return prompt.Build(prompt.Spec{
		Event:         req.Event,
		Previous:      req.Previous,
		Session:       req.Session,
		SessionState:  s.session.describe(),
		Turn:          req.Turn,
		FiredBy:       string(req.FiredBy),
		TieOff:        req.TieOff,
		TieOffOmitted: req.TieOffOmitted,
		Now:           s.now,
		Instructions:  s.instructions,
		Limits:        s.limits,
		Continuing:    s.continuing,
		Fresh:         s.fresh,
		Answers:       answers,
		Resumed:       s.session.resumed && s.session.restart == nil && s.fresh == "",
		Asking:        askingLine(&req.Agent),
		Schedule:      req.Schedule,
	})
}

// askingLine is what the Permissions line says to an agent at
// permissions: ask: what becomes of a call that is not a read, so that
// the agent knows why one is refused for now and what comes next (ACP
// gives a refusal no reason); "" at any other level.
func askingLine(a *Agent) string {
	switch {
	case a.permissions() != PermAsk:
		return ""
	case a.asksWhileRunning():
		return "reads run; any other call waits for the user's answer, and one not answered in time is refused for now: its question stays open in the note's tie-off, and the user's answer comes to you in a later turn"
	}
	return "reads run; any other call is held for the user's answer, and your turn goes on once they answer"
}
