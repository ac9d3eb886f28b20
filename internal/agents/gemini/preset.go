package gemini

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/agents/kit"
)

// Preset runs Gemini CLI in ACP mode (Agent Client Protocol: JSON-RPC
// 2.0, one message a line, on standard input and output):
//
//	gemini --acp --approval-mode default [--model M]
//
// knotd is the ACP client: the one ACP driver every protocol: acp agent
// gets (agentrun, on github.com/coder/acp-go-sdk), with this preset. One
// attempt is one conversation: initialize (offering knotd's file system,
// which Gemini CLI's read_file, write_file and edit tools use for files
// in the vault), then session/new (a new session) or session/load of the
// resume handle, then one session/prompt whose text block is the prompt;
// when the prompt's response arrives, standard input is closed and the
// CLI exits. The working directory and the session's cwd are the vault
// root (Gemini keeps sessions per project directory).
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
//   - session/load of a session id with a leading space (loadID) loads
//     that session; the plain id loses it when the load comes in the
//     clock minute the session started in (see loadID);
//   - session/load replays the conversation as session/update
//     notifications (user_message_chunk, agent_message_chunk…) without
//     waiting for it: the load's response comes after the first, and
//     available_commands_update (from a timer) after the replay, or, once
//     the history outgrows the pipe, in the middle of it. knotd sends the
//     prompt after both; the updates before it are history, and the rest
//     of the replay after it is set apart too (kit.ACPPreset.Replay, and
//     the ACP normalizer of agents/acp; TestGemini_RealCLILongHistory);
//   - the prompt's response carries the turn's tokens in
//     _meta.quota.token_count (the model's prompt and candidate tokens; the
//     routing classifier's call is not counted, nor cached tokens);
//   - an API error is the prompt's error response (code 401, the API's
//     error object as its message: apiErrorMessage); the CLI itself exits 0;
//   - a folder the user has not trusted is not refused, unlike headless
//     mode: the CLI runs without the folder's own settings, hooks and
//     agents, in approval mode default (it says so on standard error;
//     knotd notes it: stderrNotes);
//   - a tool call that needs approval is a session/request_permission
//     request from the CLI, answered by the agent's permissions as for
//     every ACP agent.
//
// --approval-mode default is passed whatever the permissions: it
// overrides a defaultApprovalMode in the user's settings (auto_edit would
// approve edits without asking), so that every tool call needing approval
// is asked of knotd, which answers per the agent's permissions.
//
// Gemini CLI has no system-prompt flag, so instructions go before the
// Event Context. knotd sends no authenticate request: Gemini CLI's
// authenticate saves the chosen method in the user's settings (and clears
// cached credentials of another); the method configured for Gemini CLI is
// used as it is. The default max_context is 800,000 tokens: Gemini's
// models hold 1M.
var Preset = &kit.ACPPreset{
	Name:       "Gemini CLI",
	Program:    "gemini",
	Args:       []string{"--acp", "--approval-mode", "default"},
	ModelFlag:  "--model",
	MaxContext: 800_000,
	// Gemini CLI 0.61.0 takes an ACP error for a read as a failure
	// whatever its code: its client rejects with the error object, which
	// its check for a missing file (the message of an Error, or
	// String(err): "[object Object]") never matches, so write_file of a
	// new file through knotd's file system always failed ("Error checking
	// existing file: … does not exist"). Read as empty, the file is one
	// write_file creates; its read_file tool checks that a file exists
	// itself, with node's fs, before it reads.
	MissingReadsEmpty:     true,
	Format:                FormatACP,
	Replay:                true,
	LoadID:                loadID,
	SessionLost:           sessionLost,
	ErrorMessage:          apiErrorMessage,
	StderrNotes:           stderrNotes,
	StderrNoted:           untrustedLine,
	DecoderNotesInMessage: true,
}

// sessionLost tells Gemini CLI's two refusals of a session/load that mean
// it does not have the session.
func sessionLost(reason string) bool {
	return strings.Contains(reason, "No previous sessions found") || strings.Contains(reason, "Invalid session identifier")
}

// stderrNotes notes a run in a folder the user has not trusted.
func stderrNotes(stderr string) []string {
	if untrustedLine(stderr) {
		return []string{untrustedNote}
	}
	return nil
}

// untrustedLine reports whether s says the folder is not trusted: that is
// the note's, not a failure's cause.
func untrustedLine(s string) bool {
	return slices.ContainsFunc(untrusted, func(u string) bool { return strings.Contains(s, u) })
}

// The standard-error texts of Gemini CLI 0.61.0 running in a folder the
// user has not trusted.
var untrusted = []string{"due to untrusted folder", "because the folder is not trusted"}

// untrustedNote is knotd's note for a run in an untrusted folder.
const untrustedNote = "Gemini CLI does not trust the vault folder, so it ran without the vault's own Gemini settings, hooks and agents. " +
	"knotd does not trust folders for you: to let Gemini CLI use them, trust the folder in Gemini CLI " +
	"(or add its path with \"TRUST_FOLDER\" to ~/.gemini/trustedFolders.json)"

// loadID is the session id knotd's session/load, and the requests about
// the loaded session, name for Gemini CLI's session id: the id with a
// leading space. Gemini CLI 0.61.0 looks the session up by the trimmed id
// but names a chat file after the id as given, and with the plain id a
// load in the UTC minute the session started in loses the conversation.
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
func loadID(id string) string { return " " + id }

// apiErrorMessage is the message of Gemini CLI's error response for a
// failure's reason. Gemini CLI 0.61.0 puts an API error's JSON object in
// the message ({"error":{"code":401,"message":…,"status":"UNAUTHENTICATED"}}):
// its status and message; any other message as it is.
func apiErrorMessage(msg string) string {
	var api struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(msg), &api) != nil || api.Error.Message == "" {
		return msg
	}
	if api.Error.Status != "" {
		return api.Error.Status + ": " + api.Error.Message
	}
	return api.Error.Message
}
