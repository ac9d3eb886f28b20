package agentrun

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/agents/gemini"
)

// geminiDriver runs Gemini CLI in ACP mode (Agent Client Protocol: JSON-RPC
// 2.0, one message a line, on standard input and output):
//
//	gemini --acp --approval-mode default [--model M]
//
// knotd is the ACP client: the one protocol: acp agents get
// (acpConversation, on github.com/coder/acp-go-sdk), in Gemini's mode
// (geminiACP). One attempt is one conversation: initialize (offering
// knotd's file system, which Gemini CLI's read_file, write_file and edit
// tools use for files in the vault), then session/new (a new
// session) or session/load of the resume handle, then one session/prompt
// whose text block is the prompt; when the prompt's response arrives,
// standard input is closed and the CLI exits. The working directory and the session's cwd
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
//     notifications (user_message_chunk, agent_message_chunk…) without
//     waiting for it: the load's response comes after the first, and
//     available_commands_update (from a timer) after the replay, or, once
//     the history outgrows the pipe, in the middle of it. knotd sends the
//     prompt after both; the updates before it are history, and the rest
//     of the replay after it is set apart too (acpMode.replay, and the
//     transcript's geminiACPNormalizer; TestGemini_RealCLILongHistory);
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

// maxContext is the default max_context: Gemini's models hold 1M tokens.
func (geminiDriver) maxContext() int64 { return 800_000 }

// geminiACP is the ACP client's mode for Gemini CLI (see geminiDriver).
var geminiACP = acpMode{
	name:                  "Gemini CLI",
	format:                gemini.FormatACP,
	replay:                true,
	loadID:                geminiLoadID,
	lost:                  geminiSessionLost,
	stderrNotes:           geminiStderrNotes,
	stderrNoted:           geminiUntrustedLine,
	decoderNotesInMessage: true,
}

// parser is not used: the conversation parses (see converse).
func (geminiDriver) parser() outputParser { return newACPModeConversation(nil, geminiACP) }

func (geminiDriver) converse(a *attempt) conversation { return newACPModeConversation(a, geminiACP) }

// geminiSessionLost tells Gemini CLI's two refusals of a session/load that
// mean it does not have the session.
func geminiSessionLost(reason string) bool {
	return strings.Contains(reason, "No previous sessions found") || strings.Contains(reason, "Invalid session identifier")
}

// geminiStderrNotes notes a run in a folder the user has not trusted.
func geminiStderrNotes(stderr string) []string {
	if geminiUntrustedLine(stderr) {
		return []string{geminiUntrustedNote}
	}
	return nil
}

// geminiUntrustedLine reports whether s says the folder is not trusted:
// that is the note's, not a failure's cause.
func geminiUntrustedLine(s string) bool {
	return slices.ContainsFunc(geminiUntrusted, func(u string) bool { return strings.Contains(s, u) })
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

// acpError is an agent's JSON-RPC error, for its text.
type acpError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
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
