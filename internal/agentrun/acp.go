package agentrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	acp "github.com/coder/acp-go-sdk"
	acpagent "github.com/knotd/knotd/internal/agents/acp"
	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/transcript"
)

// acpDriver runs a command that speaks the Agent Client Protocol on its
// standard input and output (protocol: acp): goose acp, opencode acp,
// copilot --acp, the Claude and Codex ACP adapters, any of them by its
// argv. knotd is the ACP client, on github.com/coder/acp-go-sdk (ACP
// protocol version 1); one attempt is one acpConversation:
//
//   - initialize, offering fs.readTextFile when the run has a file system
//     (Request.FS), fs.writeTextFile only at permissions edit, full or ask
//     (at ask, for the files of an edit the user approved), and never a
//     terminal;
//   - a new session (session/new; its id is the resume handle), or the
//     session to continue: session/resume when the agent offers it, else
//     session/load (its replayed history is left out of the transcript).
//     An agent that refuses it, or offers neither, lost the conversation:
//     the run starts a fresh one, once, and says so;
//   - one session/prompt whose single text block is the prompt, the
//     session/update notifications streamed into the transcript as they
//     come (agents/acpagent.Format), the usage from the prompt's response and
//     usage_update;
//   - session/request_permission answered per the agent's permissions
//     (acpPermit: ACP's tool kinds decide; at permissions ask, the user's
//     answer: see acp_ask.go);
//   - on timeout or stop, session/cancel, then up to the grace period for
//     the agent to end the turn, before its process group is stopped.
//
// When the prompt's response arrives, standard input is closed and the
// agent exits. The command is run as written: no template values, no
// model (an ACP agent chooses its own) unless its preset passes one
// (kit.ACPPreset.ModelFlag).
//
// Every ACP preset (a kit.ACPPreset in its folder under agents/:
// claude-acp, codex-acp, gemini, opencode) runs on this one driver; it
// adds its arguments, environment and session options, and the ways of
// its agent in the protocol (a replayed history, a session id of its own,
// the refusals that mean a session is lost, its notes).
type acpDriver struct {
	// preset is nil for a protocol: acp command.
	preset *kit.ACPPreset
}

func (acpDriver) delivery() PromptMode     { return PromptStdin }
func (acpDriver) inlineInstructions() bool { return true }
func (acpDriver) resumes() bool            { return true }
func (acpDriver) limits() Limits           { return Limits{} }

// p is the driver's preset, noPreset for a command.
func (d acpDriver) p() *kit.ACPPreset {
	if d.preset == nil {
		return noPreset
	}
	return d.preset
}

func (d acpDriver) defaultProgram() string { return d.p().Program }

// maxContext is the preset's default max_context (0: none).
func (d acpDriver) maxContext() int64 { return d.p().MaxContext }

// parser is not used: the conversation parses (see converse).
func (d acpDriver) parser() outputParser { return newACPConversation(nil, d.p()) }

// argv is the program, the preset's arguments, and the model after the
// preset's ModelFlag (a preset without one takes no model: converse notes
// it).
func (d acpDriver) argv(a *attempt) ([]string, error) {
	p := d.p()
	argv := append(append([]string(nil), a.program...), p.Args...)
	if a.model != "" && p.ModelFlag != "" {
		argv = append(argv, p.ModelFlag, a.model)
	}
	return argv, nil
}

// env is the preset's environment, set over the agent's own.
func (d acpDriver) env() [][2]string { return d.p().Env }

// agentName is the agent in notes: the preset's Name, else "the agent".
func agentName(p *kit.ACPPreset) string {
	if p.Name == "" {
		return "the agent"
	}
	return p.Name
}

func (acpDriver) sessionLost(exitCode int, p parsed, _ string) (string, bool) {
	if exitCode != 0 || p.lost == "" {
		return "", false
	}
	return p.lost, true
}

func (d acpDriver) converse(a *attempt) conversation {
	c := newACPConversation(a, d.p())
	if a.model != "" && c.preset.ModelFlag == "" {
		c.notes = append(c.notes, fmt.Sprintf("the model %q was not passed on: an ACP agent chooses its own model", a.model))
	}
	return c
}

// acpConversation is knotd's side of one ACP conversation, held by the
// SDK's client connection. The runner hands it every line of the agent's
// output (line, on the output copier goroutine): each goes to the
// agent's decoder (agents/) once the prompt is sent, and to the SDK through a
// pipe. What the SDK writes goes to the agent's input through the
// runner's outbox (attach). The SDK's requests are made by drive, a
// goroutine that attach starts and finish waits for.
type acpConversation struct {
	// preset is the agent's (noPreset for a command), agent its name.
	preset              *kit.ACPPreset
	agent               string
	prompt, cwd, resume string
	perm                Permissions
	fs                  FileSystem
	grace               time.Duration
	// At permissions ask: the answers the run may apply, the caller's
	// Ask (nil: none), how long it waits, and askCtx, ended when the run
	// is stopped (cancel) or over (finish).
	answers []question.Answer
	ask     func(context.Context, question.Call) (question.Answer, bool)
	askWait time.Duration
	askCtx  context.Context
	askStop context.CancelFunc

	push func(msgs [][]byte, close bool) error
	pr   *io.PipeReader
	pw   *io.PipeWriter
	conn *acp.ClientSideConnection
	ctx  context.Context
	stop context.CancelFunc
	// ended is closed when drive returned; turnEnded when the prompt got
	// its response (or drive gave up).
	ended, turnEnded chan struct{}
	// commands is closed at the first available_commands_update (preset.Replay).
	commands     chan struct{}
	commandsOnce sync.Once

	// mu guards everything below, and serialises live and the decoder:
	// the file system's calls come on the SDK's goroutines.
	mu        sync.Mutex
	content   blockStream
	live      func(transcript.AssistantMessage)
	blocks    []transcript.Block // handed to live (or that would be), in order
	decHanded int                // of which the decoder's
	fsCalls   int
	session   string
	acpID     string // the session id knotd's requests name
	prompted  bool
	done      bool
	cancelled bool
	refused   int // permission requests knotd refused
	// At permissions ask: what the agent said since its last request for
	// permission, what it said before each request (by toolCallId), and
	// the files of the edits the user approved, which fs/write_text_file
	// may then write.
	said       string
	whys       map[string]string
	approved   map[string]approvedEdit
	unanswered int    // calls refused for now, their questions open
	kept       string // why the file system last refused an edit (MayEdit)
	agentErr   string
	lost       string
	notes      []string
}

// newACPConversation returns the conversation of attempt a (nil: a parser
// that reads nothing) with the agent of preset p.
func newACPConversation(a *attempt, p *kit.ACPPreset) *acpConversation {
	c := &acpConversation{preset: p, agent: agentName(p), content: newBlockStream(acpFormat(p)), ended: make(chan struct{}),
		turnEnded: make(chan struct{}), commands: make(chan struct{})}
	c.content.watch(c.decodedBlocks)
	if p.Replay {
		// The decoder learns where the prompt went (see line).
		c.content.dec.PromptSent(false)
	}
	if a != nil {
		c.prompt, c.cwd, c.resume = a.prompt, a.req.Vault, a.resume
		c.perm, c.fs = a.req.Agent.permissions(), a.req.FS
		c.answers, c.ask, c.askWait = a.req.Answers, a.req.Ask, a.req.Agent.askWait()
		if !utf8.ValidString(a.prompt) {
			// JSON strings are Unicode: encoding the prompt replaces them.
			c.notes = append(c.notes, "the prompt is not valid UTF-8: its invalid bytes reached "+c.agent+" as U+FFFD")
		}
	}
	return c
}

// acpFormat is the transcript format of preset p's agent's output.
func acpFormat(p *kit.ACPPreset) transcript.Format {
	if p.Format == "" {
		return acpagent.Format
	}
	return p.Format
}

// decodesAll: the decoder reads every line, not only the prompt turn's
// (the agent replays a loaded session's history: preset.Replay).
func (c *acpConversation) decodesAll() bool { return c.preset.Replay }

func (c *acpConversation) watch(live func(transcript.AssistantMessage)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
}

// decodedBlocks receives the decoder's final blocks (under mu).
func (c *acpConversation) decodedBlocks(m transcript.AssistantMessage) {
	c.decHanded += len(m.Blocks)
	c.hand(m.Blocks)
}

// hand records blocks and gives them to live (under mu).
func (c *acpConversation) hand(blocks []transcript.Block) {
	c.blocks = append(c.blocks, blocks...)
	if c.live != nil {
		c.live(transcript.AssistantMessage{Format: c.content.format, Blocks: blocks})
	}
}

// open sends nothing itself: attach starts the conversation.
func (c *acpConversation) open() [][]byte { return nil }

// attach is called by proc.Run once the outbox exists, before the agent
// starts: push queues the SDK's messages for the agent's input.
func (c *acpConversation) attach(push func(msgs [][]byte, close bool) error, grace time.Duration) {
	c.push, c.grace = push, grace
	c.pr, c.pw = io.Pipe()
	c.ctx, c.stop = context.WithCancel(context.Background())
	c.askCtx, c.askStop = context.WithCancel(c.ctx)
	c.conn = acp.NewClientSideConnection(acpClient{c}, outboxWriter{push}, c.pr)
	// The SDK logs what it cannot read; the agent's decoder counts it.
	c.conn.SetLogger(slog.New(slog.DiscardHandler))
	go c.drive()
}

// outboxWriter hands the SDK's messages (one line each) to the outbox.
type outboxWriter struct {
	push func(msgs [][]byte, close bool) error
}

func (w outboxWriter) Write(b []byte) (int, error) {
	msg := bytes.TrimSuffix(append([]byte(nil), b...), []byte("\n"))
	if err := w.push([][]byte{msg}, false); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (c *acpConversation) line(b []byte) (send [][]byte, done bool) {
	c.mu.Lock()
	if c.prompted || c.decodesAll() {
		c.content.line(b)
	}
	if c.perm == PermAsk {
		c.heard(b)
	}
	c.mu.Unlock()
	if c.pw == nil {
		return nil, false
	}
	// Blocks while the SDK reads it; fails once the SDK stopped reading
	// (then the conversation is over).
	if _, err := c.pw.Write(append(append([]byte(nil), b...), '\n')); err != nil {
		return nil, true
	}
	return nil, false
}

// drive makes knotd's requests in turn; it ends the conversation (closes
// the agent's input) when it returns.
func (c *acpConversation) drive() {
	defer close(c.ended)
	defer func() {
		select {
		case <-c.turnEnded:
		default:
			close(c.turnEnded)
		}
		// An error: the outbox failed, which the runner reports.
		_ = c.push(nil, true)
	}()
	// When the SDK stops reading (the agent's output ended, or it could
	// not go on), line's writes fail instead of blocking.
	go func() {
		<-c.conn.Done()
		c.pr.CloseWithError(errors.New("the ACP connection is closed"))
	}()
	fail := func(format string, args ...any) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.agentErr = fmt.Sprintf(format, args...)
	}
	// gone: the agent's output ended before it answered; finish says
	// so, with its exit status and standard error, rather than the SDK.
	gone := func(err error) bool { return acpDisconnected(err) }
	caps := acp.ClientCapabilities{}
	if c.fs != nil {
		caps.Fs.ReadTextFile = true
		caps.Fs.WriteTextFile = c.perm == PermEdit || c.perm == PermFull || c.perm == PermAsk
	}
	init, err := c.conn.Initialize(c.ctx, acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersionNumber,
		ClientCapabilities: caps,
		ClientInfo:         &acp.Implementation{Name: "knotd", Version: "1"},
	})
	if gone(err) {
		return
	}
	if err != nil {
		fail("the agent did not initialize the ACP connection: %s", c.errText(err))
		return
	}
	if init.ProtocolVersion != acp.ProtocolVersionNumber {
		fail("the agent speaks ACP protocol version %d; knotd speaks version %d: update the agent or knotd", init.ProtocolVersion, acp.ProtocolVersionNumber)
		return
	}
	session, acpID := c.resume, c.resume
	switch {
	case c.resume == "":
		r, err := c.conn.NewSession(c.ctx, acp.NewSessionRequest{Meta: c.preset.Meta, Cwd: c.cwd, McpServers: []acp.McpServer{}})
		if gone(err) {
			return
		}
		if err != nil {
			fail("the agent could not start a session (session/new): %s", c.errText(err))
			return
		}
		if r.SessionId == "" {
			fail("the agent's session/new returned no sessionId")
			return
		}
		session, acpID = string(r.SessionId), string(r.SessionId)
	case c.preset.Replay && !init.AgentCapabilities.LoadSession:
		fail("%s cannot load a session (no loadSession capability): it cannot continue a conversation", c.agent)
		return
	case c.preset.Replay:
		if c.preset.LoadID != nil {
			acpID = c.preset.LoadID(c.resume)
		}
		if _, err := c.conn.LoadSession(c.ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(acpID), Cwd: c.cwd, McpServers: []acp.McpServer{}}); err != nil {
			c.sessionLost("session/load", err)
			return
		}
		// The prompt goes once the replay has begun (its updates before
		// the prompt are history; the decoder sets the rest apart).
		select {
		case <-c.commands:
		case <-c.conn.Done():
			return
		case <-c.ctx.Done():
			return
		}
	case init.AgentCapabilities.SessionCapabilities.Resume != nil:
		if _, err := c.conn.ResumeSession(c.ctx, acp.ResumeSessionRequest{Meta: c.preset.Meta, SessionId: acp.SessionId(c.resume), Cwd: c.cwd}); err != nil {
			c.sessionLost("session/resume", err)
			return
		}
	case init.AgentCapabilities.LoadSession:
		if _, err := c.conn.LoadSession(c.ctx, acp.LoadSessionRequest{Meta: c.preset.Meta, SessionId: acp.SessionId(c.resume), Cwd: c.cwd, McpServers: []acp.McpServer{}}); err != nil {
			c.sessionLost("session/load", err)
			return
		}
	default:
		c.mu.Lock()
		c.lost = "the agent offers neither session/resume nor session/load"
		c.agentErr = c.lost
		c.mu.Unlock()
		return
	}
	if mode := c.preset.Mode; mode != "" {
		_, err := c.conn.SetSessionMode(c.ctx, acp.SetSessionModeRequest{SessionId: acp.SessionId(session), ModeId: acp.SessionModeId(mode)})
		if gone(err) {
			return
		}
		if err != nil {
			fail("the agent did not switch its session to mode %q (session/set_mode), in which it asks before it edits: %s", mode, c.errText(err))
			return
		}
	}
	c.mu.Lock()
	c.session, c.acpID, c.prompted = session, acpID, true
	c.said = "" // a loaded session's history is not what the agent says now
	if c.preset.Replay {
		// Every line read so far came before the prompt: none is the
		// turn's. The lines after it may still be the replay's.
		c.content.dec.PromptSent(true)
	}
	c.mu.Unlock()
	r, err := c.conn.Prompt(c.ctx, acp.PromptRequest{SessionId: acp.SessionId(acpID), Prompt: []acp.ContentBlock{acp.TextBlock(c.prompt)}})
	c.mu.Lock()
	defer c.mu.Unlock()
	if gone(err) {
		return
	}
	if err != nil {
		if c.resume != "" && c.promptLost(err) {
			// The agent resumed a session whose conversation it no
			// longer has (Codex with its store gone).
			c.lost = firstLine("session/prompt refused: "+c.errText(err), 200)
			c.agentErr = c.lost
			return
		}
		c.agentErr = c.agent + " failed the prompt: " + c.errText(err)
		if re := (*acp.RequestError)(nil); errors.As(err, &re) && re.Code == acpAuthRequired {
			c.agentErr += "; sign in to the agent (run its command yourself once, as the user knotd runs as) and retry"
		}
		return
	}
	c.done = true
	switch r.StopReason {
	case acp.StopReasonEndTurn:
	case acp.StopReasonRefusal:
		c.agentErr = "the agent refused the prompt (stopReason refusal): change the note or the agent's instructions"
	case acp.StopReasonCancelled:
		switch {
		case c.cancelled:
		case c.refused > 0 && c.kept != "":
			c.agentErr = c.keptErr()
		case c.refused > 0 && c.perm == PermAsk:
			c.agentErr = c.heldErr()
		case c.refused > 0:
			// Codex ends the turn when a request is refused.
			c.agentErr = fmt.Sprintf("the agent ended its turn when knotd refused its request for permission (permissions %s): raise the agent's permissions to let it, or ask for less in the note", c.perm)
		default:
			c.agentErr = "the agent cancelled the turn itself (stopReason cancelled)"
		}
	case acp.StopReasonMaxTokens, acp.StopReasonMaxTurnRequests:
		c.notes = append(c.notes, fmt.Sprintf("the agent stopped early (stopReason %s): the reply may be cut short; raise the agent's own limit", r.StopReason))
	}
}

// acpAuthRequired is ACP's error code for an agent that needs the user to
// authenticate first.
const acpAuthRequired = -32000

// promptLost reports that err, the agent's error answering the prompt,
// means it no longer has the conversation (the preset's LostAtPrompt).
func (c *acpConversation) promptLost(err error) bool {
	var re *acp.RequestError
	if c.preset.LostAtPrompt == nil || !errors.As(err, &re) {
		return false
	}
	return c.preset.LostAtPrompt(c.errText(re))
}

// sessionLost records that the agent refused to continue the session.
func (c *acpConversation) sessionLost(method string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if acpDisconnected(err) {
		return
	}
	var re *acp.RequestError
	if !errors.As(err, &re) {
		c.agentErr = fmt.Sprintf("the agent did not answer %s: %s", method, c.errText(err))
		return
	}
	if c.preset.SessionLost != nil {
		c.agentErr = c.errText(err)
		if c.preset.SessionLost(c.agentErr) {
			c.lost = firstLine(c.agentErr, 200)
		}
		return
	}
	c.lost = firstLine(fmt.Sprintf("%s refused: %s", method, c.errText(err)), 200)
	c.agentErr = c.lost
}

// cancel is called when the run's context ends (timeout, stop), before
// the agent's process group is signalled: it sends session/cancel during
// a prompt turn and waits up to the grace period for the turn to end.
func (c *acpConversation) cancel() {
	c.mu.Lock()
	session, prompted, done := c.acpID, c.prompted, c.done
	if prompted && !done {
		c.cancelled = true
		c.notes = append(c.notes, "knotd sent session/cancel: the run's time ran out or it was stopped")
	}
	c.mu.Unlock()
	if c.askStop != nil {
		// A question waiting for the user is answered "cancelled", as
		// ACP wants once the turn is cancelled.
		c.askStop()
	}
	if c.conn == nil || !prompted || done {
		return
	}
	if err := c.conn.Cancel(c.ctx, acp.CancelNotification{SessionId: acp.SessionId(session)}); err != nil {
		return // the agent's input is closed: it is being stopped anyway
	}
	t := time.NewTimer(c.grace)
	defer t.Stop()
	select {
	case <-c.turnEnded:
	case <-t.C:
	}
}

func (c *acpConversation) finish(stdout []byte, _ bool, stderr string) (parsed, error) {
	if c.conn != nil {
		// The agent exited: its output is over, and so is every request.
		// The SDK sees the end first, so a request waiting for its
		// answer ends as disconnected, not as cancelled by knotd.
		_ = c.pw.Close() // a PipeWriter's Close never fails
		<-c.conn.Done()
		c.stop()
		<-c.ended
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var d kit.Decoded
	if c.prompted || c.decodesAll() {
		d = c.content.dec.Finish(stdout)
	}
	msg := d.Message
	msg.Format = c.content.format
	// The blocks handed out, the file system's among them, then the
	// decoder's last ones.
	msg.Blocks = append(append([]transcript.Block(nil), c.blocks...), d.Message.Blocks[min(c.decHanded, len(d.Message.Blocks)):]...)
	if c.agentErr == "" && c.done && c.refused > 0 && cleanReply(d.Reply) == "" {
		// OpenCode ends the turn, without a word, when a request is refused.
		c.agentErr = c.keptErr()
		if c.agentErr == "" && c.perm == PermAsk {
			c.agentErr = c.heldErr()
		}
		if c.agentErr == "" {
			c.agentErr = fmt.Sprintf("the agent ended its turn without a reply when knotd refused its request for permission (permissions %s): raise the agent's permissions to let it, or ask for less in the note", c.perm)
		}
	}
	p := parsed{reply: d.Reply, handle: c.session, usage: d.Usage, agentErr: c.agentErr, lost: c.lost, context: d.ContextTokens, window: d.ContextWindow,
		notes: append([]string(nil), c.notes...), message: &msg}
	if !c.preset.DecoderNotesInMessage {
		p.notes = append(p.notes, d.Message.Notes...)
	}
	if c.preset.StderrNotes != nil {
		p.notes = append(p.notes, c.preset.StderrNotes(stderr)...)
	}
	p.noted = c.preset.StderrNoted
	if c.agentErr == "" && c.done && d.SetAside > 0 && cleanReply(d.Reply) == "" {
		// The decoder's doing, not the agent's: say so, not "empty reply".
		return p, fmt.Errorf("knotd took the %d updates %s sent after the prompt for the loaded session's replayed history, and found no reply after them: knotd's failure, not the agent's (the run's output holds every update)", d.SetAside, c.agent)
	}
	if c.agentErr == "" && !c.done {
		if len(bytes.TrimSpace(stdout)) == 0 {
			return p, errNoOutput
		}
		if !c.prompted {
			return p, errors.New("the ACP agent stopped before the prompt was sent: check that the command speaks ACP on its standard input and output (for example goose acp, opencode acp, copilot --acp)")
		}
		return p, errors.New("the ACP agent stopped before answering the prompt")
	}
	return p, nil
}

// acpDisconnected reports that err is the SDK's for a request whose
// answer never came because the agent's output ended (its
// peerDisconnectedErr: an internal error whose data says so).
func acpDisconnected(err error) bool {
	var re *acp.RequestError
	if !errors.As(err, &re) {
		return false
	}
	data, ok := re.Data.(map[string]any)
	if !ok {
		return false
	}
	msg, _ := data["error"].(string)
	return re.Code == -32603 && strings.HasPrefix(msg, "peer disconnected")
}

// errText is an error of the SDK (the agent's error response, or the
// connection's end) as a reason: the response's message (as the preset's
// ErrorMessage rewrites it), or the cause an internal error gives in
// data.details, and its code.
func (c *acpConversation) errText(err error) string {
	var re *acp.RequestError
	if !errors.As(err, &re) {
		return err.Error()
	}
	msg := re.Message
	if c.preset.ErrorMessage != nil {
		msg = c.preset.ErrorMessage(msg)
	}
	var data struct {
		Details string `json:"details"`
	}
	if b, merr := json.Marshal(re.Data); merr == nil && json.Unmarshal(b, &data) == nil && data.Details != "" { // it came from JSON
		msg = data.Details
	}
	return firstLine(fmt.Sprintf("%s (ACP error %d)", msg, re.Code), 300)
}

// acpClient is the client side the SDK calls: the agent's requests and
// notifications.
type acpClient struct{ c *acpConversation }

// SessionUpdate: the decoder reads the updates from the lines themselves;
// the client notes the first available_commands_update (see
// kit.ACPPreset.Replay).
func (cl acpClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if n.Update.AvailableCommandsUpdate != nil {
		cl.c.commandsOnce.Do(func() { close(cl.c.commands) })
	}
	return nil
}

func (cl acpClient) RequestPermission(ctx context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	var req acpPermissionRequest
	for _, o := range p.Options {
		req.Options = append(req.Options, struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		}{string(o.OptionId), string(o.Kind)})
	}
	if p.ToolCall.Title != nil {
		req.ToolCall.Title = *p.ToolCall.Title
	}
	if p.ToolCall.Kind != nil {
		req.ToolCall.Kind = string(*p.ToolCall.Kind)
	}
	optionID, allowed := acpPermit(cl.c.perm, req)
	verdict := "refused"
	if allowed {
		verdict = "allowed"
	}
	if cl.c.perm == PermAsk && !readKind(req.ToolCall.Kind) {
		// Held for the user (acp_ask.go).
		call := cl.c.heldCall(p.ToolCall, cl.c.whyOf(string(p.ToolCall.ToolCallId)))
		var cancelled bool
		allowed, cancelled, verdict = cl.c.decide(ctx, call)
		if cancelled {
			cl.c.mu.Lock()
			cl.c.notes = append(cl.c.notes, fmt.Sprintf("%s asked permission for %q (a tool call of kind %s): %s (permissions ask)",
				cl.c.agent, firstLine(req.ToolCall.Title, 120), req.ToolCall.Kind, verdict))
			cl.c.mu.Unlock()
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}, nil
		}
		optionID = acpOption(req, allowed)
		if optionID == "" {
			allowed = false
		}
	}
	// An edit the agent may then make with its own tools, past knotd's
	// file system: refused as that file system would refuse the write,
	// and when it would lose a save of the user's.
	var kept error
	if paths := editPaths(p.ToolCall); allowed && isEdit(p.ToolCall) && cl.c.fs != nil {
		if len(paths) == 0 && cl.c.perm != PermFull {
			// ACP makes a request's locations optional: an edit that
			// names no file could write anywhere, over any save.
			kept = errors.New("the edit names no file (no locations, no diff), so knotd cannot check where it writes; permissions full lets such edits through")
		} else if len(paths) > 0 {
			kept = cl.c.fs.MayEdit(ctx, paths)
		}
		if kept != nil {
			optionID, allowed = acpPermit(PermReadOnly, req)
			verdict = kept.Error()
		}
	}
	cl.c.mu.Lock()
	if !allowed {
		cl.c.refused++
	}
	if allowed && cl.c.perm == PermAsk && isEdit(p.ToolCall) {
		// The approved edit may go through knotd's file system too.
		if cl.c.approved == nil {
			cl.c.approved = map[string]approvedEdit{}
		}
		for _, path := range editPaths(p.ToolCall) {
			cl.c.approved[filepath.Clean(path)] = approvedEdit{}
		}
		for _, ct := range p.ToolCall.Content {
			if d := ct.Diff; d != nil && d.Path != "" {
				text := d.NewText
				cl.c.approved[filepath.Clean(d.Path)] = approvedEdit{text: &text}
			}
		}
	}
	if kept != nil {
		cl.c.kept = kept.Error()
	}
	cl.c.notes = append(cl.c.notes, fmt.Sprintf("%s asked permission for %q (a tool call of kind %s): %s (permissions %s)",
		cl.c.agent, firstLine(req.ToolCall.Title, 120), req.ToolCall.Kind, verdict, cl.c.perm))
	cl.c.mu.Unlock()
	if optionID == "" {
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}, nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: acp.PermissionOptionId(optionID)}}}, nil
}

// acpPermissionRequest is the part of session/request_permission's
// params knotd reads.
type acpPermissionRequest struct {
	Options []struct {
		OptionID string `json:"optionId"`
		Kind     string `json:"kind"`
	} `json:"options"`
	ToolCall struct {
		Title string `json:"title"`
		Kind  string `json:"kind"`
	} `json:"toolCall"`
}

// acpPermit decides a permission request: whether perm allows a tool
// call of its kind (ACP's tool kinds: read, search and think read only;
// edit, delete and move change files; execute, fetch, switch_mode and
// other may do anything), and the option that says so. An allowed call
// gets the allow_once option, never an "always" one, so every call is
// asked again; a refused one reject_once, or "cancelled" (optionID "")
// when the agent offered none.
//
// At permissions ask only reads are allowed here: the others are held
// for the user (decide).
func acpPermit(perm Permissions, p acpPermissionRequest) (optionID string, allowed bool) {
	switch p.ToolCall.Kind {
	case "read", "search", "think":
		allowed = true
	case "edit", "delete", "move":
		allowed = perm == PermEdit || perm == PermFull
	default:
		allowed = perm == PermFull
	}
	optionID = acpOption(p, allowed)
	return optionID, allowed && optionID != ""
}

// acpOption is the option of p that allows the call once (allowed) or
// rejects it once, "" when the agent offered none.
func acpOption(p acpPermissionRequest, allowed bool) string {
	want := "reject_once"
	if allowed {
		want = "allow_once"
	}
	for _, o := range p.Options {
		if o.Kind == want {
			return o.OptionID
		}
	}
	return ""
}

// heldErr is the failure of a turn the agent ended when knotd refused,
// at permissions ask, a call the user has not approved.
func (c *acpConversation) heldErr() string {
	if c.unanswered > 0 {
		return "the agent ended its turn when knotd refused a call the user has not answered yet (permissions ask): the question stays open in the tie-off, and an approval reaches the agent in a later turn"
	}
	return "the agent ended its turn when knotd refused a call the user denied (permissions ask)"
}

// keptErr is the failure of a turn the agent ended when knotd refused an
// edit its file system would not let through (MayEdit), "" when it
// refused none.
func (c *acpConversation) keptErr() string {
	if c.kept == "" {
		return ""
	}
	return "the agent ended its turn when knotd refused to let it edit a file (" + c.kept + ")"
}

// editPaths returns the files a tool call of kind edit, delete or move
// names (its locations and diffs), none for other kinds.
// isEdit reports whether a tool call changes files: of kind edit, delete
// or move.
func isEdit(tc acp.ToolCallUpdate) bool {
	return tc.Kind != nil && (*tc.Kind == acp.ToolKindEdit || *tc.Kind == acp.ToolKindDelete || *tc.Kind == acp.ToolKindMove)
}

func editPaths(tc acp.ToolCallUpdate) []string {
	if !isEdit(tc) {
		return nil
	}
	var paths []string
	for _, l := range tc.Locations {
		paths = append(paths, l.Path)
	}
	for _, c := range tc.Content {
		if c.Diff != nil {
			paths = append(paths, c.Diff.Path)
		}
	}
	paths = slices.DeleteFunc(paths, func(p string) bool { return p == "" })
	slices.Sort(paths)
	return slices.Compact(paths)
}

// acpResourceNotFound is ACP's error code for a resource that does not
// exist (the TypeScript SDK's RequestError.resourceNotFound).
const acpResourceNotFound = -32002

func (cl acpClient) ReadTextFile(ctx context.Context, p acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	input := map[string]any{"path": p.Path}
	line, limit := 0, 0
	if p.Line != nil {
		line, input["line"] = *p.Line, *p.Line
	}
	if p.Limit != nil {
		limit, input["limit"] = *p.Limit, *p.Limit
	}
	var (
		text string
		err  error
	)
	if cl.c.fs == nil {
		err = errors.New("knotd offered no file system to this agent")
	} else {
		text, err = cl.c.fs.ReadTextFile(ctx, p.Path, line, limit)
	}
	if errors.Is(err, fs.ErrNotExist) {
		if cl.c.preset.MissingReadsEmpty {
			cl.c.fsCall("fs/read_text_file", input, "the file does not exist: answered as empty, the content of the file a write would create", nil)
			return acp.ReadTextFileResponse{Content: ""}, nil
		}
		// ACP's own error for a missing resource, which agents tell
		// from a failure (a file their edit would create).
		cl.c.fsCall("fs/read_text_file", input, "", err)
		return acp.ReadTextFileResponse{}, &acp.RequestError{Code: acpResourceNotFound, Message: "Resource not found: " + p.Path, Data: map[string]any{"uri": p.Path}}
	}
	cl.c.fsCall("fs/read_text_file", input, fmt.Sprintf("read %d bytes", len(text)), err)
	if err != nil {
		return acp.ReadTextFileResponse{}, &acp.RequestError{Code: -32603, Message: err.Error()}
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

func (cl acpClient) WriteTextFile(ctx context.Context, p acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	input := map[string]any{"path": p.Path, "bytes": len(p.Content)}
	var err error
	switch {
	case cl.c.fs == nil:
		err = errors.New("knotd offered no file system to this agent")
	case cl.c.perm == PermAsk:
		err = cl.c.writeApproved(p.Path, p.Content)
		if err == nil {
			err = cl.c.fs.WriteTextFile(ctx, p.Path, p.Content)
		}
	case cl.c.perm != PermEdit && cl.c.perm != PermFull && cl.c.perm != PermAsk:
		err = fmt.Errorf("the agent's permissions are %s: knotd refuses writes (permissions edit or full allow them)", cl.c.perm)
	default:
		err = cl.c.fs.WriteTextFile(ctx, p.Path, p.Content)
	}
	cl.c.fsCall("fs/write_text_file", input, fmt.Sprintf("wrote %d bytes", len(p.Content)), err)
	if err != nil {
		return acp.WriteTextFileResponse{}, &acp.RequestError{Code: -32603, Message: err.Error()}
	}
	return acp.WriteTextFileResponse{}, nil
}

// approvedEdit is an edit the user approved at permissions ask: its new
// text when the request showed it (a diff), which a write must then be.
type approvedEdit struct{ text *string }

// writeApproved says why a write of content to path is refused at
// permissions ask: the user approved no edit of that file in this run, or
// the write is not the text of the edit they approved (nil: it is).
func (c *acpConversation) writeApproved(path, content string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.approved[filepath.Clean(path)]
	switch {
	case !ok:
		return fmt.Errorf("the agent's permissions are ask and the user approved no edit of %s in this run: knotd refuses the write (ask for permission to edit it first)", path)
	case a.text != nil && *a.text != content:
		return fmt.Errorf("the write of %s is not the edit the user approved (its text differs from the diff they saw): knotd refuses it (ask for permission for this edit)", path)
	}
	return nil
}

// fsCall records a file system call in the transcript as a tool call of
// knotd's (its use and its result: what was done, or why it was refused).
func (c *acpConversation) fsCall(method string, input map[string]any, did string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fsCalls++
	id := fmt.Sprintf("knotd-fs-%d", c.fsCalls)
	in, _ := json.Marshal(input) // strings and numbers
	result := transcript.Block{Type: transcript.BlockToolResult, Fidelity: transcript.Reconstructed, ToolUseID: id, Content: "allowed: " + did}
	if err != nil {
		result.Content, result.IsError = "refused: "+err.Error(), true
	}
	c.hand([]transcript.Block{
		{Type: transcript.BlockToolUse, Fidelity: transcript.Reconstructed, ID: id, Name: method, Input: in},
		result,
	})
}

// No terminal: knotd does not offer the capability, and refuses the calls.

func (acpClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (acpClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (acpClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (acpClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (acpClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}
