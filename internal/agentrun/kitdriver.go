package agentrun

import (
	"context"

	"github.com/knotd/knotd/internal/agentrun/internal/proc"
	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/transcript"
)

// kitDriver runs an agent whose driver lives in its own package under
// agents/ (a kit.Driver, listed in the registry) with the runner's driver
// interface: it hands the driver the attempt as a kit.Attempt and takes
// back its kit.Parsed.
//
// The runner keeps its own driver interface, and this adapter, because two
// of its three kinds of driver are no kit.Driver: the generic command
// (commandDriver) reads the agent's configuration and the Request (its
// templates, prompt file, JSON pointers, whether the session continues)
// and parses with agentrun's own parsers; the ACP driver (acpDriver) holds
// a conversation (talker, streamingTalk, cancellingTalk) over the runner's
// outbox with the Request's file system. Making them kit.Drivers would move
// those interfaces, the attempt's request and the parsed result's lost and
// noted into kit, for drivers that belong to the runner.
type kitDriver struct{ d kit.Driver }

// newKitDriver returns the runner's driver for d. A kit.Totaler stays a
// totaler: the runner treats a totaler's usage as running totals.
func newKitDriver(d kit.Driver) driver {
	if _, ok := d.(kit.Totaler); ok {
		return kitTotaler{kitDriver{d}}
	}
	return kitDriver{d}
}

func (k kitDriver) delivery() PromptMode     { return k.d.Delivery() }
func (k kitDriver) inlineInstructions() bool { return k.d.InlineInstructions() }
func (k kitDriver) resumes() bool            { return k.d.Resumes() }
func (k kitDriver) defaultProgram() string   { return k.d.DefaultProgram() }

// limits: a driver that is no kit.Limiter has the package defaults.
func (k kitDriver) limits() Limits {
	if l, ok := k.d.(kit.Limiter); ok {
		return l.Limits()
	}
	return Limits{}
}

func (k kitDriver) argv(a *attempt) ([]string, error) { return k.d.Argv(a.kit()) }

// parser: a kit.TextParser is the runner's textParser, whose output is
// handed to Request.OnOutput as it comes.
func (k kitDriver) parser() outputParser {
	p := k.d.Parser()
	if _, ok := p.(kit.TextParser); ok {
		return textParser{}
	}
	if lp, ok := p.(kit.LineParser); ok {
		return kitLineParser{kitParser{lp}, lp}
	}
	return kitParser{p}
}

// prepare: a driver that is no kit.Preparer has no step before an attempt.
func (k kitDriver) prepare(a *attempt) error {
	if p, ok := k.d.(kit.Preparer); ok {
		return p.Prepare(a.kit())
	}
	return nil
}

// finish: a driver that is no kit.Finisher has no step after an attempt.
func (k kitDriver) finish(ctx context.Context, a *attempt, p *parsed, run func(context.Context, []string) proc.Result) {
	f, ok := k.d.(kit.Finisher)
	if !ok {
		return
	}
	kp := p.kit()
	f.Finish(ctx, a.kit(), &kp, func(ctx context.Context, argv []string) kit.Proc {
		pr := run(ctx, argv)
		return kit.Proc{OK: pr.StartErr == nil && pr.ExitCode == 0, Stdout: pr.Stdout, Stderr: pr.Stderr, Status: pr.Describe()}
	})
	lost := p.lost
	*p = fromKit(kp)
	p.lost = lost
}

// resumesHeld: a driver that is no kit.HeldResumer gets the prompt as
// usual when it continues a held call.
func (k kitDriver) resumesHeld() bool {
	h, ok := k.d.(kit.HeldResumer)
	return ok && h.ResumesHeld()
}

// sessionLost: a driver that is no kit.SessionRecoverer never loses one.
func (k kitDriver) sessionLost(exitCode int, p parsed, stderr string) (string, bool) {
	if r, ok := k.d.(kit.SessionRecoverer); ok {
		return r.SessionLost(exitCode, p.kit(), stderr)
	}
	return "", false
}

// explain: a driver that is no kit.FailureExplainer has no advice.
func (k kitDriver) explain(a *attempt, exitCode int, stderr string) string {
	if x, ok := k.d.(kit.FailureExplainer); ok {
		return x.Explain(a.kit(), exitCode, stderr)
	}
	return ""
}

// maxContext: a driver that is no kit.ContextDefaulter has no default.
func (k kitDriver) maxContext() int64 {
	if c, ok := k.d.(kit.ContextDefaulter); ok {
		return c.MaxContext()
	}
	return 0
}

// turnContext: a driver that is no kit.TurnContexter measures no context
// from the turn's use.
func (k kitDriver) turnContext(turn Usage) int64 {
	if c, ok := k.d.(kit.TurnContexter); ok {
		return c.TurnContext(turn)
	}
	return 0
}

// kitTotaler is the runner's driver for a kit.Totaler.
type kitTotaler struct{ kitDriver }

func (k kitTotaler) turn(total, before Usage) Usage {
	return k.d.(kit.Totaler).Turn(total, before)
}

// kitParser is a kit.Parser as the runner's outputParser.
type kitParser struct{ p kit.Parser }

func (k kitParser) finish(stdout []byte, truncated bool, stderr string) (parsed, error) {
	p, err := k.p.Finish(stdout, truncated, stderr)
	return fromKit(p), err
}

// fromKit returns what a kit driver parsed as the runner's parsed.
func fromKit(p kit.Parsed) parsed {
	return parsed{reply: p.Reply, handle: p.Handle, usage: p.Usage, agentErr: p.AgentErr, notes: p.Notes, message: p.Message,
		context: p.Context, window: p.Window, held: p.Held}
}

// kitLineParser is a kit.LineParser as the runner's lineParser.
type kitLineParser struct {
	kitParser
	lp kit.LineParser
}

func (k kitLineParser) line(b []byte)                                { k.lp.Line(b) }
func (k kitLineParser) watch(live func(transcript.AssistantMessage)) { k.lp.Watch(live) }

// kit returns the attempt as a kit driver sees it.
func (a *attempt) kit() *kit.Attempt {
	return &kit.Attempt{Program: a.program, Model: a.model, Session: a.session, Resume: a.resume,
		Instructions: a.instructions, Prompt: a.prompt, Permissions: a.req.Agent.permissions(), MaxCostUSD: a.req.MaxCostUSD,
		StateDir: a.req.StateDir, StrandSession: a.req.Session, Vault: a.req.Vault,
		Answers: a.req.Answers, Continuing: a.req.Continuing && a.resume != "", Hook: a.req.Hook}
}

// kit returns what was parsed as a kit driver sees it.
func (p parsed) kit() kit.Parsed {
	return kit.Parsed{Reply: p.reply, Handle: p.handle, Usage: p.usage, AgentErr: p.agentErr, Notes: p.notes, Message: p.message,
		Context: p.context, Window: p.window, Held: p.held}
}

// The runner's optional driver interfaces a kitDriver implements.
var (
	_ sessionRecoverer = kitDriver{}
	_ failureExplainer = kitDriver{}
	_ contextDefaulter = kitDriver{}
	_ turnContexter    = kitDriver{}
	_ preparer         = kitDriver{}
	_ heldResumer      = kitDriver{}
	_ finisher         = kitDriver{}
	_ totaler          = kitTotaler{}
	_ lineParser       = kitLineParser{}
)
