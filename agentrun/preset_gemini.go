package agentrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/knotd/knotd/transcript"
)

// geminiDriver runs Gemini CLI in ACP mode (Agent Client Protocol: JSON-RPC
// 2.0, one message a line, on standard input and output):
//
//	gemini --acp --approval-mode default [--model M]
//
// knotd is the ACP client. One attempt is one conversation (see
// geminiConversation): initialize, then session/new (a new session) or
// session/load of the resume handle, then one session/prompt whose text
// block is the prompt; when the prompt's response arrives, standard input
// is closed and the CLI exits. The working directory and the session's cwd
// are the vault root (Gemini keeps sessions per project directory).
//
// ACP rather than headless mode (gemini -p, or the prompt on standard
// input) because headless Gemini CLI runs its "@" processing on the
// prompt: it rewrote "me@example.com" and sent the content of a vault file
// a note named as "@notes/secret.txt" to the model. A text block of
// session/prompt reaches the model byte for byte (TestGemini_RealCLIVerbatim).
//
// What Gemini CLI 0.61.0 was seen to do in ACP mode:
//   - session/new takes no session id: the CLI picks one, which is the
//     resume handle (the strand's session id is not used);
//   - session/load of a session the CLI does not have (its store was
//     wiped, the vault moved, another agent's handle) answers an error
//     ("No previous sessions found for this project.", or "Invalid session
//     identifier"): the run starts a fresh session, once (sessionLost);
//   - session/load of a session id with a leading space (geminiLoadID)
//     loads that session; the plain id loses it when the load comes in the
//     clock minute the session started in (see geminiLoadID);
//   - session/load replays the conversation as session/update
//     notifications (user_message_chunk, agent_message_chunk…) from a
//     background task, then sends available_commands_update from a timer:
//     knotd sends the prompt only after that, and ignores replayed
//     updates;
//   - the prompt's response carries the turn's tokens in
//     _meta.quota.token_count (the model's prompt and candidate tokens; the
//     routing classifier's call is not counted, nor cached tokens);
//   - an API error is the prompt's error response (code 401, the API's
//     error object as its message); the CLI itself exits 0;
//   - a folder the user has not trusted is not refused, unlike headless
//     mode: the CLI runs without the folder's own settings, hooks and
//     agents, in approval mode default (it says so on standard error;
//     knotd notes it);
//   - a tool call that needs approval is a session/request_permission
//     request from the CLI, answered by geminiPermit.
//
// Gemini CLI has no system-prompt flag, so instructions go before the
// Event Context. knotd sends no authenticate request: Gemini CLI's
// authenticate saves the chosen method in the user's settings (and clears
// cached credentials of another); the method configured for Gemini CLI is
// used as it is.
type geminiDriver struct{}

func (geminiDriver) delivery() PromptMode     { return PromptStdin }
func (geminiDriver) inlineInstructions() bool { return true }
func (geminiDriver) resumes() bool            { return true }
func (geminiDriver) defaultProgram() string   { return "gemini" }
func (geminiDriver) limits() Limits           { return Limits{} }

// parser is not used: the conversation parses (see converse).
func (geminiDriver) parser() outputParser {
	return &geminiConversation{content: newBlockStream(transcript.FormatGeminiACP)}
}

func (geminiDriver) converse(a *attempt) conversation {
	c := &geminiConversation{
		prompt:  a.prompt,
		cwd:     a.req.Vault,
		resume:  a.resume,
		perm:    a.req.Agent.permissions(),
		content: newBlockStream(transcript.FormatGeminiACP),
	}
	if !utf8.ValidString(a.prompt) {
		// JSON strings are Unicode: encoding the prompt replaces them.
		c.notes = append(c.notes, "the prompt is not valid UTF-8: its invalid bytes reached Gemini CLI as U+FFFD")
	}
	return c
}

// argv passes --approval-mode default whatever the permissions: it
// overrides a defaultApprovalMode in the user's settings (auto_edit would
// approve edits without asking), so that every tool call needing approval
// is asked of knotd, which answers per Agent.Permissions.
func (geminiDriver) argv(a *attempt) ([]string, error) {
	argv := append(append([]string(nil), a.program...), "--acp", "--approval-mode", "default")
	if a.model != "" {
		argv = append(argv, "--model", a.model)
	}
	return argv, nil
}

func (geminiDriver) sessionLost(exitCode int, p parsed, _ string) (string, bool) {
	if exitCode != 0 || p.lost == "" {
		return "", false
	}
	return p.lost, true
}

// The standard-error texts of Gemini CLI 0.61.0 running in a folder the
// user has not trusted.
var geminiUntrusted = []string{"due to untrusted folder", "because the folder is not trusted"}

// geminiUntrustedNote is knotd's note for a run in an untrusted folder.
const geminiUntrustedNote = "Gemini CLI does not trust the vault folder, so it ran without the vault's own Gemini settings, hooks and agents. " +
	"knotd does not trust folders for you: to let Gemini CLI use them, trust the folder in Gemini CLI " +
	"(or add its path with \"TRUST_FOLDER\" to ~/.gemini/trustedFolders.json)"

// The request ids of knotd's side of the conversation.
const (
	acpInitialize = 1
	acpSession    = 2 // session/new or session/load
	acpPrompt     = 3
)

// geminiConversation is knotd's side of one ACP conversation with Gemini
// CLI: it sends the requests in turn and answers the CLI's requests. What
// the CLI says (the reply, its blocks, the usage) is read from the same
// lines by the transcript's gemini-acp decoder, as they arrive.
type geminiConversation struct {
	prompt, cwd string
	resume      string // the session to load, "" for a new one
	perm        Permissions

	session string // the session id, once known: the resume handle
	// acpID is the session id knotd's ACP requests name: session or,
	// for a loaded session, geminiLoadID(session).
	acpID string
	// loaded: session/load succeeded; commands: the
	// available_commands_update that ends a load's replay was seen (it may
	// come before the load's response).
	loaded, commands bool
	prompted         bool // session/prompt was sent
	done             bool
	agentErr         string
	lost             string
	notes            []string
	badLines         int
	// content decodes every line for the reply, usage and blocks.
	content blockStream
}

func (c *geminiConversation) watch(live func(transcript.AssistantMessage)) { c.content.watch(live) }

// acpMessage is one JSON-RPC message from the CLI: a request (method and
// id), a notification (method only) or a response (id, result or error).
type acpMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *acpError       `json:"error"`
}

type acpError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (c *geminiConversation) open() [][]byte {
	return [][]byte{acpRequest(acpInitialize, "initialize", map[string]any{
		"protocolVersion": 1,
		// No file system or terminal: the CLI uses its own tools, and asks
		// before any that needs approval.
		"clientCapabilities": map[string]any{},
	})}
}

func (c *geminiConversation) line(b []byte) (send [][]byte, done bool) {
	c.content.line(b) // all of the output, also what follows the end
	if c.done {
		return nil, true
	}
	var m acpMessage
	if err := json.Unmarshal(b, &m); err != nil {
		c.badLines++
		return nil, false
	}
	switch {
	case m.Method != "" && len(m.ID) > 0:
		return [][]byte{c.answer(m)}, false
	case m.Method == "session/update":
		c.update(m.Params)
	case m.Method == "" && len(m.ID) > 0:
		send = c.response(m)
	}
	if !c.done && c.loaded && c.commands && !c.prompted {
		send = append(send, c.promptRequest())
	}
	return send, c.done
}

// response handles the answer to one of knotd's requests.
func (c *geminiConversation) response(m acpMessage) [][]byte {
	var id int
	if err := json.Unmarshal(m.ID, &id); err != nil {
		return nil
	}
	if m.Error != nil {
		if id == acpSession && c.resume != "" {
			if reason := m.Error.text(); strings.Contains(reason, "No previous sessions found") || strings.Contains(reason, "Invalid session identifier") {
				c.lost = firstLine(reason, 200)
			}
		}
		c.agentErr = m.Error.text()
		c.done = true
		return nil
	}
	switch id {
	case acpInitialize:
		if c.resume != "" {
			var r struct {
				AgentCapabilities struct {
					LoadSession bool `json:"loadSession"`
				} `json:"agentCapabilities"`
			}
			if err := json.Unmarshal(m.Result, &r); err == nil && !r.AgentCapabilities.LoadSession {
				c.agentErr, c.done = "this Gemini CLI cannot load a session (no loadSession capability): it cannot continue a conversation", true
				return nil
			}
			c.session, c.acpID = c.resume, geminiLoadID(c.resume)
			return [][]byte{acpRequest(acpSession, "session/load", map[string]any{"sessionId": c.acpID, "cwd": c.cwd, "mcpServers": []any{}})}
		}
		return [][]byte{acpRequest(acpSession, "session/new", map[string]any{"cwd": c.cwd, "mcpServers": []any{}})}
	case acpSession:
		if c.resume != "" {
			c.loaded = true
			return nil // the prompt goes once the replay is over
		}
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal(m.Result, &r); err != nil || r.SessionID == "" {
			c.agentErr, c.done = "Gemini CLI's session/new returned no sessionId", true
			return nil
		}
		c.session, c.acpID = r.SessionID, r.SessionID
		return [][]byte{c.promptRequest()}
	case acpPrompt:
		c.done = true // its stopReason and usage are the decoder's
	}
	return nil
}

// geminiLoadID is the session id knotd's session/load, and the requests
// about the loaded session, name for Gemini CLI's session id: the id with
// a leading space. Gemini CLI 0.61.0 looks the session up by the trimmed
// id but names a chat file after the id as given, and with the plain id
// a load in the UTC minute the session started in loses the conversation.
//
// Its ACP loadSession (packages/cli/src/acp/acpSessionManager.ts; in the
// npm bundle gemini-3HFX2LNT.js:16429) calls config.initialize() first,
// which starts a fresh chat (GeminiClient.initialize, chunk-JDPZ4CE3.js:379256)
// before the session is looked up. The fresh chat's recording
// (ChatRecordingService.initialize, core/src/services/chatRecordingService.ts;
// chunk-JDPZ4CE3.js:286261-286284) appends to
// chats/session-<UTC YYYY-MM-DDTHH-MM>-<first 8 characters of the
// sanitized id>.jsonl, then {"$set":{"messages":[<session_context>]}}
// (updateMessagesFromHistory, 286644). In the session's first minute that
// is the conversation's own file; reading it (loadConversationRecord,
// 286093) the "$set" replaces every message before it, the session
// context alone is no resumable content (isIgnoredUserContent, 285867),
// and SessionSelector.findSession (packages/cli/src/utils/sessionUtils.ts;
// chunk-2YTYPKEZ.js:9981, 10095) finds no session: "No previous sessions
// found for this project." (or "Invalid session identifier"), and the
// conversation is gone for good. In a later minute the fresh chat gets a
// file of its own.
//
// findSession trims the identifier (chunk-2YTYPKEZ.js:10093) while the
// recording's name keeps it, with the space made "_" (sanitizeFilenamePart,
// core/src/utils/fileUtils.ts; chunk-JDPZ4CE3.js:254099): the fresh chat of
// a load of " <id>" goes to session-<minute>-_<7 characters>.jsonl, and
// the conversation, found by the trimmed id, goes on in its own file. That
// other file has no 8-character short id in its name, so the session
// retention cleanup (general.sessionRetention, on by default;
// packages/cli/src/utils/sessionCleanup.ts, chunk-2YTYPKEZ.js:10260,
// 10382) deletes it alone, where it deletes every file of the session's
// short id, the conversation's too, for the file a plain-id load leaves.
// The CLI keeps the loaded session under the id as given, so the prompt
// names " <id>" too; the resume handle stays the plain id.
func geminiLoadID(id string) string { return " " + id }

func (c *geminiConversation) promptRequest() []byte {
	c.prompted = true
	return acpRequest(acpPrompt, "session/prompt", map[string]any{
		"sessionId": c.acpID,
		"prompt":    []any{map[string]any{"type": "text", "text": c.prompt}},
	})
}

// update follows the session/update notifications for the protocol: a
// load's replay of the history ends with available_commands_update, after
// which the prompt may be sent.
func (c *geminiConversation) update(params json.RawMessage) {
	var p struct {
		Update struct {
			Kind string `json:"sessionUpdate"`
		} `json:"update"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		c.badLines++
		return
	}
	if p.Update.Kind == "available_commands_update" {
		c.commands = c.resume != ""
	}
}

// answer answers a request of the CLI: a permission request per the
// agent's permissions, anything else "method not found" (knotd offers no
// file system or terminal).
func (c *geminiConversation) answer(m acpMessage) []byte {
	if m.Method != "session/request_permission" {
		return acpReply(m.ID, nil, &acpError{Code: -32601, Message: "method not found: " + m.Method})
	}
	var p geminiPermissionRequest
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return acpReply(m.ID, nil, &acpError{Code: -32602, Message: "invalid params: " + err.Error()})
	}
	optionID, allowed := geminiPermit(c.perm, p)
	verdict := "refused"
	if allowed {
		verdict = "allowed"
	}
	c.notes = append(c.notes, fmt.Sprintf("Gemini CLI asked permission for %q (a tool call of kind %s): %s (permissions %s)",
		firstLine(p.ToolCall.Title, 120), p.ToolCall.Kind, verdict, c.perm))
	outcome := map[string]any{"outcome": "cancelled"}
	if optionID != "" {
		outcome = map[string]any{"outcome": "selected", "optionId": optionID}
	}
	return acpReply(m.ID, map[string]any{"outcome": outcome}, nil)
}

// geminiPermissionRequest is the part of session/request_permission's
// params knotd reads.
type geminiPermissionRequest struct {
	Options []struct {
		OptionID string `json:"optionId"`
		Kind     string `json:"kind"`
	} `json:"options"`
	ToolCall struct {
		Title string `json:"title"`
		Kind  string `json:"kind"`
	} `json:"toolCall"`
}

// geminiPermit decides a permission request: whether perm allows a tool
// call of its kind (ACP's tool kinds: read, search and think read only;
// edit, delete and move change files; execute, fetch, switch_mode and
// other may do anything), and the option that says so. An allowed call
// gets the allow_once option, never an "always" one, so every call is
// asked again; a refused one reject_once, or "cancelled" (optionID "")
// when the CLI offered none.
func geminiPermit(perm Permissions, p geminiPermissionRequest) (optionID string, allowed bool) {
	switch p.ToolCall.Kind {
	case "read", "search", "think":
		allowed = true
	case "edit", "delete", "move":
		allowed = perm == PermEdit || perm == PermFull
	default:
		allowed = perm == PermFull
	}
	want := "reject_once"
	if allowed {
		want = "allow_once"
	}
	for _, o := range p.Options {
		if o.Kind == want {
			return o.OptionID, allowed
		}
	}
	return "", false
}

// finish reports what the conversation gathered.
func (c *geminiConversation) finish(stdout []byte, _ bool, stderr string) (parsed, error) {
	d := c.content.decoded(stdout)
	p := parsed{reply: d.Reply, handle: c.session, usage: d.Usage, agentErr: c.agentErr, lost: c.lost, notes: c.notes, message: &d.Message}
	for _, s := range geminiUntrusted {
		if strings.Contains(stderr, s) {
			p.notes = append(p.notes, geminiUntrustedNote)
			break
		}
	}
	if c.badLines > 0 {
		p.notes = append(p.notes, fmt.Sprintf("%d lines of Gemini CLI's output were not ACP messages knotd could read", c.badLines))
	}
	switch {
	case c.done:
		return p, nil
	case len(bytes.TrimSpace(stdout)) == 0:
		return p, errNoOutput
	case !c.prompted:
		return p, errors.New("the Gemini CLI stopped before the prompt was sent")
	}
	return p, errors.New("the Gemini CLI stopped before answering the prompt")
}

// text is an ACP error's message for a failure reason. Gemini CLI 0.61.0
// puts an API error's JSON object in the message ({"error":{"code":401,
// "message":…,"status":"UNAUTHENTICATED"}}) and an internal error's cause
// in data.details.
func (e *acpError) text() string {
	msg := e.Message
	var api struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(msg), &api) == nil && api.Error.Message != "" {
		msg = api.Error.Message
		if api.Error.Status != "" {
			msg = api.Error.Status + ": " + msg
		}
	}
	var data struct {
		Details string `json:"details"`
	}
	if len(e.Data) > 0 && json.Unmarshal(e.Data, &data) == nil && data.Details != "" {
		msg = data.Details
	}
	return firstLine(fmt.Sprintf("%s (ACP error %d)", msg, e.Code), 300)
}

// acpRequest encodes a JSON-RPC request.
func acpRequest(id int, method string, params any) []byte {
	return mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

// acpReply encodes the response to a request of the CLI.
func acpReply(id json.RawMessage, result any, e *acpError) []byte {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		m["error"] = map[string]any{"code": e.Code, "message": e.Message}
	} else {
		m["result"] = result
	}
	return mustJSON(m)
}

// mustJSON encodes values built here from strings, numbers, maps and raw
// JSON that was decoded before: encoding them cannot fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("agentrun: encode an ACP message: " + err.Error())
	}
	return b
}
