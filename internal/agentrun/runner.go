package agentrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/agentrun/internal/livetext"
	"github.com/knotd/knotd/internal/agentrun/internal/proc"
)

// DefaultGrace is how long an agent gets to stop after SIGTERM before it is
// killed, and how long a leftover descendant may keep the output pipes open
// after the agent exited.
const DefaultGrace = 5 * time.Second

// Defaults for what a Runner keeps of an agent's output.
const (
	// DefaultMaxStdout is how much standard output a Result keeps.
	DefaultMaxStdout = 1 << 20
	// DefaultMaxStderr is how much of the end of standard error a Result
	// keeps.
	DefaultMaxStderr = 8 << 10
	// DefaultMaxLine is the longest JSON line a streaming preset parses;
	// longer lines are skipped and reported in Result.Notes.
	DefaultMaxLine = 16 << 20
)

// Runner runs agents. The zero Runner is ready to use; its fields tune it.
// A Runner is safe for concurrent use: Run keeps no state between calls.
type Runner struct {
	// Limits bounds the prompt; zero fields take the preset's or the
	// package's defaults (DefaultLimits).
	Limits Limits
	// Grace is the time between SIGTERM and SIGKILL (default DefaultGrace).
	Grace time.Duration
	// MaxStdout is how much standard output a Result keeps (default
	// DefaultMaxStdout).
	MaxStdout int
	// MaxStderr is how much of the end of standard error a Result keeps
	// (default DefaultMaxStderr).
	MaxStderr int
	// MaxLine is the longest output line a streaming preset parses
	// (default DefaultMaxLine).
	MaxLine int
	// TempDir is where prompt files are written (default os.TempDir()).
	TempDir string
	// Now returns the time for the Event Context's Now line when the
	// request has none (default time.Now).
	Now func() time.Time
	// Environ returns the environment agents inherit (default os.Environ).
	Environ func() []string
	// NewSessionID returns the id of a fresh conversation when an agent
	// could not continue its own (default uuid.NewString).
	NewSessionID func() string
	// Groups, when set, records each agent's process group while it runs
	// (on Linux; see Group and EndOrphans).
	Groups GroupRecorder
}

// errTimedOut is the cause of a run's context when its timeout expires.
var errTimedOut = errors.New("agentrun: run timed out")

// Run runs req's agent on req's event and returns what happened. It blocks
// until the agent and every process it started are gone, at most about
// Runner.Grace after the agent's timeout (which covers every attempt of the
// run). When ctx ends, the agent is stopped and the Result's Outcome is
// canceled.
//
// The error is non-nil only for a malformed request or agent definition
// (ErrBadRequest, ErrInvalidAgent, ErrInvalidModel) or a prompt over its
// hard cap (ErrPromptTooLarge); an agent that fails, hangs or prints
// nonsense yields a Result with Outcome failed, timeout or canceled.
func (r *Runner) Run(ctx context.Context, req Request) (Result, error) {
	if err := req.validate(); err != nil {
		return Result{}, err
	}
	started := time.Now()
	kind := req.Agent.kind()
	res := Result{Agent: req.Agent.label(), Preset: kind, Model: req.model(), ExitCode: -1}
	if kind == PresetDigest {
		if req.OnStart != nil {
			// The digest reads no prompt; its error only leaves it out.
			prompt, _ := buildPrompt(promptSpec{req: &req, now: r.now(&req), limits: withDefaults(r.Limits, Limits{})})
			req.OnStart(Start{Try: 1, Prompt: prompt})
		}
		runDigest(ctx, &req, &res)
		if res.Reply != "" {
			res.Message = textMessage(res.Reply, false)
		}
		res.Duration = time.Since(started)
		return res, nil
	}
	d := newDriver(&req.Agent, kind)
	timeout := req.Agent.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	runCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()

	a := r.firstAttempt(&req, d)
	if a.fresh != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("%s started a new conversation instead of continuing %s: %s", res.Agent, req.continued(), a.fresh))
	}
	for try := 1; ; try++ {
		out, err := r.attempt(runCtx, d, &a, &res, try)
		if err != nil {
			return Result{}, err
		}
		if out.interrupted(runCtx) {
			recordInterrupted(ctx, runCtx, timeout, out, &res)
			break
		}
		if rec, ok := d.(sessionRecoverer); ok && try == 1 && out.runErr == nil {
			if reason, lost := rec.sessionLost(out.proc.ExitCode, out.parsed, out.proc.Stderr); lost {
				handle := a.session
				if a.resume != "" {
					handle = a.resume
				}
				res.Restarted = &Restart{Handle: handle, Reason: reason}
				res.Notes = append(res.Notes, fmt.Sprintf("%s could not continue conversation %s (%s); a fresh one was started", res.Agent, handle, reason))
				a.resume, a.session = "", r.newSessionID()
				continue
			}
		}
		if f, ok := d.(finisher); ok && out.succeeded() {
			f.finish(runCtx, &a, &out.parsed, func(ctx context.Context, argv []string) proc.Result {
				return proc.Run(ctx, r.procSpec(&a, argv, false, nil))
			})
		}
		classify(out, &res)
		if x, ok := d.(failureExplainer); ok && res.Outcome == OutcomeFailed {
			if advice := x.explain(&a, out.proc.ExitCode, out.proc.Stderr); advice != "" {
				res.Reason += " (" + advice + ")"
			}
		}
		perTurn(d, &a, req.TotalsBefore, &res)
		break
	}
	res.Duration = time.Since(started)
	return res, nil
}

// perTurn turns the running totals of a totaler's CLI into the run's own
// use: in a conversation resumed from a turn whose totals are known, the
// difference; in a new one (or one started afresh), the totals are the
// turn's. res.Totals keeps the totals for the next turn. A turnContexter's
// context size is measured from the turn's use, never from a whole
// conversation's total (the totals before unknown): that turn has none.
func perTurn(d driver, a *attempt, before *Usage, res *Result) {
	t, ok := d.(totaler)
	if !ok || res.Usage == nil {
		return
	}
	total := *res.Usage
	res.Totals = &total
	switch {
	case a.resume == "":
	case before != nil:
		u := t.turn(total, *before)
		res.Usage = &u
	default:
		res.Notes = append(res.Notes, res.Agent+" reported the conversation's running total, and the total before this turn is not known: the usage recorded for this run is the whole conversation's")
		return
	}
	if c, ok := d.(turnContexter); ok && res.ContextTokens == 0 {
		res.ContextTokens = c.turnContext(*res.Usage)
	}
}

// Prompt returns the prompt Run would give req's agent on its first attempt,
// for a dry run. The digest agent reads no prompt; Prompt still returns the
// one an agent would see.
func (r *Runner) Prompt(req Request) (string, error) {
	if err := req.validate(); err != nil {
		return "", err
	}
	kind := req.Agent.kind()
	if kind == PresetDigest {
		return buildPrompt(promptSpec{req: &req, now: r.now(&req), limits: withDefaults(r.Limits, Limits{})})
	}
	d := newDriver(&req.Agent, kind)
	a := r.firstAttempt(&req, d)
	return r.prompt(d, &a, nil)
}

func (r *Runner) firstAttempt(req *Request, d driver) attempt {
	a := attempt{req: req, program: program(&req.Agent, d), model: req.model(), session: req.Session}
	if d.resumes() {
		a.resume = req.Resume
	}
	if c, ok := d.(continuer); ok {
		a.continues = c.continues(req)
	}
	if (a.resume != "" || a.continues) && !resumesHeld(d, &a) {
		// (A held call is continued in its conversation, full or not: a
		// new one would not have it.)
		if why := freshStart(req, d); why != "" {
			// The conversation is full: this turn starts a new one, as
			// after a restart, under an id of its own.
			a.fresh = why
			a.resume, a.continues, a.session = "", false, r.newSessionID()
		}
	}
	if !d.inlineInstructions() {
		a.instructions = req.Agent.Instructions
	}
	return a
}

func (r *Runner) prompt(d driver, a *attempt, restart *Restart) (string, error) {
	spec := promptSpec{
		req:     a.req,
		now:     r.now(a.req),
		session: sessionState{resumed: a.resume != "" || a.continues, restart: restart},
		limits:  withDefaults(r.Limits, d.limits()),
		// A turn continues the conversation that answered the previous
		// version only on the first attempt, resuming it: a restart or a
		// fresh start is a new conversation.
		continuing: restart == nil && a.fresh == "" && (a.resume != "" || a.continues) &&
			a.req.Continues && a.req.Agent.ResumePrompt != ResumeWhole,
		fresh: a.fresh,
	}
	if d.inlineInstructions() {
		spec.instructions = a.req.Agent.Instructions
	}
	return buildPrompt(spec)
}

// attemptOutcome is what one attempt produced.
type attemptOutcome struct {
	proc     proc.Result
	parsed   parsed
	parseErr error
	// runErr is set when the attempt could not run the agent at all (its
	// command line could not be built, a file could not be written).
	runErr error
}

func (o *attemptOutcome) interrupted(runCtx context.Context) bool {
	return o.proc.Interrupted || (o.proc.StartErr != nil && runCtx.Err() != nil)
}

func (o *attemptOutcome) succeeded() bool {
	return o.runErr == nil && o.proc.StartErr == nil && o.proc.ExitCode == 0 &&
		o.parseErr == nil && o.parsed.agentErr == "" && cleanReply(o.parsed.reply) != ""
}

// attempt builds the prompt and command line and runs the agent once. Its
// error is for ErrPromptTooLarge only; everything else is in the outcome.
func (r *Runner) attempt(ctx context.Context, d driver, a *attempt, res *Result, try int) (out attemptOutcome, err error) {
	a.prompt, err = r.prompt(d, a, res.Restarted)
	if err != nil {
		return out, err
	}
	if resumesHeld(d, a) {
		// The CLI continues the held call: the turn's prompt is the
		// one that asked it, and the CLI asks knotd's hook again.
		a.prompt = ""
	}
	res.Prompt = a.prompt
	if p, ok := d.(preparer); ok {
		if out.runErr = p.prepare(a); out.runErr != nil {
			return out, nil
		}
	}
	if d.delivery() == PromptFile {
		path, err := r.writePromptFile(a.prompt)
		if err != nil {
			out.runErr = err
			return out, nil
		}
		a.promptFile = path
		defer func() {
			if err := os.Remove(path); err != nil {
				res.Notes = append(res.Notes, "could not remove the prompt file: "+err.Error())
			}
		}()
	}
	argv, err := d.argv(a)
	if err != nil {
		out.runErr = err
		return out, nil
	}
	res.Argv = argv
	parser := d.parser()
	var (
		onLine func([]byte)
		conv   conversation
	)
	if t, ok := d.(talker); ok {
		conv = t.converse(a)
		parser = conv
	} else if lp, ok := parser.(lineParser); ok {
		onLine = lp.line
	}
	if lp, ok := parser.(liveParser); ok && a.req.OnOutput != nil {
		lp.watch(a.req.OnOutput)
	}
	if a.req.OnStart != nil {
		a.req.OnStart(Start{Try: try, Argv: append([]string(nil), argv...), Prompt: a.prompt, Restarted: res.Restarted})
	}
	spec := r.procSpec(a, argv, d.delivery() == PromptStdin, onLine)
	spec.Talk = talkOf(conv)
	rp, raw := parser.(rawParser)
	var live *livetext.Text
	if raw && a.req.OnOutput != nil {
		live = livetext.New(a.req.OnOutput)
		spec.Live = live
	}
	out.proc = proc.Run(ctx, spec)
	out.parsed, out.parseErr = parser.finish(out.proc.Stdout, out.proc.StdoutTrunc, out.proc.Stderr)
	if live != nil {
		rp.streamed(&out.parsed, live.Sent())
	}
	if out.proc.TalkErr != nil {
		if out.parseErr != nil {
			out.parseErr = fmt.Errorf("%w (%w)", out.parseErr, out.proc.TalkErr)
		} else {
			out.parsed.notes = append(out.parsed.notes, out.proc.TalkErr.Error())
		}
	}
	return out, nil
}

// procSpec describes the agent process (or a helper process of the same
// agent) for an attempt.
func (r *Runner) procSpec(a *attempt, argv []string, stdin bool, onLine func([]byte)) proc.Spec {
	req := a.req
	knot := [][2]string{
		{EnvVault, req.Vault},
		{EnvStrand, req.Event.Strand.Path},
		{EnvEvent, req.Event.Type.String()},
		{EnvSession, req.Session},
		{EnvRunID, req.RunID},
	}
	if e, ok := newDriver(&req.Agent, req.Agent.kind()).(enver); ok {
		knot = append(e.env(), knot...)
	}
	environ := os.Environ
	if r.Environ != nil {
		environ = r.Environ
	}
	return proc.Spec{
		Argv:      argv,
		Dir:       req.Vault,
		Env:       proc.Environ(environ(), req.Agent.Env, req.Agent.EnvRemove, knot),
		Stdin:     a.prompt,
		HasStdin:  stdin,
		Grace:     orDefault(r.Grace, DefaultGrace),
		MaxStdout: orDefault(r.MaxStdout, DefaultMaxStdout),
		MaxStderr: orDefault(r.MaxStderr, DefaultMaxStderr),
		MaxLine:   orDefault(r.MaxLine, DefaultMaxLine),
		OnLine:    onLine,
		Groups:    r.Groups,
		RunID:     req.RunID,
	}
}

// writePromptFile writes the prompt to a new 0600 file in the temporary
// directory and returns its path.
func (r *Runner) writePromptFile(prompt string) (path string, err error) {
	f, err := os.CreateTemp(r.TempDir, "knotd-prompt-*.md")
	if err != nil {
		return "", fmt.Errorf("could not create the prompt file: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("could not write the prompt file: %w", cerr)
		}
		if err != nil {
			_ = os.Remove(f.Name()) // best effort: the write already failed
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return "", fmt.Errorf("could not restrict the prompt file: %w", err)
	}
	if _, err := f.WriteString(prompt); err != nil {
		return "", fmt.Errorf("could not write the prompt file: %w", err)
	}
	return f.Name(), nil
}

func (r *Runner) now(req *Request) time.Time {
	switch {
	case !req.Now.IsZero():
		return req.Now
	case r.Now != nil:
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) newSessionID() string {
	if r.NewSessionID != nil {
		return r.NewSessionID()
	}
	return uuid.NewString()
}

func orDefault[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
