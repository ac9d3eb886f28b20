package kit

import "github.com/knotd/knotd/internal/transcript"

// ACPPreset is a preset that runs an agent speaking the Agent Client
// Protocol through knotd's one ACP driver (agentrun): what it adds to a
// protocol: acp command. The zero value is a protocol: acp command; every
// field left zero keeps the driver's generic way.
type ACPPreset struct {
	// Name is the agent in the driver's notes and failures ("Gemini
	// CLI"); "" says "the agent".
	Name string
	// Program is the default program; Args follow the program (or the
	// agent's command).
	Program string
	Args    []string
	// ModelFlag, when set, passes the agent's model on its command line:
	// the flag, then the model, after Args. Without it the preset takes no
	// model (the agent chooses its own).
	ModelFlag string
	// MaxContext is the default max_context in tokens, 0 for none (then
	// a share of the context size the agent reports).
	MaxContext int64
	// Env is set over knotd's and the agent's environment.
	Env [][2]string
	// Meta is the _meta of session/new, session/resume and session/load.
	Meta map[string]any
	// Mode is set with session/set_mode before the prompt: the agent's
	// mode in which it asks before it edits a file or runs a command
	// (knotd answers by the agent's permissions).
	Mode string
	// Format is the transcript's format of the agent's output, whose
	// decoder reads it; "" for the generic ACP format (agents/acp.Format),
	// whose decoder reads the prompt turn's lines.
	Format transcript.Format
	// Replay: the agent continues a session by session/load only, whose
	// replay of the history has no end the protocol marks (Gemini CLI
	// 0.61.0 sends it without waiting for it: the load's response comes
	// after its first update). The prompt waits for the load's response
	// and the first available_commands_update, which comes after the
	// replay's start; the decoder (Format's, which must be PromptAware)
	// reads every line of the conversation and is told where the prompt
	// went: the updates before it are history, and it sets apart the rest
	// of the replay that follows it.
	Replay bool
	// LoadID is the session id that session/load and the requests about
	// the loaded session name for the resume handle id (Replay only); nil
	// names id itself. The resume handle stays id.
	LoadID func(id string) string
	// SessionLost tells the refusals of session/load or session/resume
	// that mean the agent does not have the session, given the error's
	// text; any other refusal fails the run. Nil: every refusal means so.
	SessionLost func(errText string) bool
	// LostAtPrompt reports that the agent's error answering the prompt of
	// a resumed session means it no longer has the conversation; it is
	// given the error's text (message, code and data). Nil: never.
	LostAtPrompt func(errText string) bool
	// ErrorMessage rewrites the message of the agent's error responses
	// for a failure's reason (an API error the agent passes on as a JSON
	// object, say); nil keeps it as it is.
	ErrorMessage func(message string) string
	// StderrNotes returns the notes of what the agent said on standard
	// error, and StderrNoted tells the lines they explain, which a
	// failure's reason then does not quote. Nil: none.
	StderrNotes func(stderr string) []string
	StderrNoted func(line string) bool
	// DecoderNotesInMessage keeps the decoder's notes in the transcript's
	// message only, not among the run's notes.
	DecoderNotesInMessage bool
	// MissingReadsEmpty answers fs/read_text_file of a file that does not
	// exist with empty content rather than ACP's "Resource not found"
	// error, for an agent that cannot tell that error from a failure and
	// so could never create a file through knotd's file system.
	MissingReadsEmpty bool
}
