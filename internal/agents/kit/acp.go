package kit

// ACPPreset is a preset that runs an agent speaking the Agent Client
// Protocol through knotd's one ACP driver (agentrun): what it adds to a
// protocol: acp command.
type ACPPreset struct {
	// Program is the default program; Args follow the program (or the
	// agent's command).
	Program string
	Args    []string
	// Env is set over knotd's and the agent's environment.
	Env [][2]string
	// Meta is the _meta of session/new, session/resume and session/load.
	Meta map[string]any
	// Mode is set with session/set_mode before the prompt: the agent's
	// mode in which it asks before it edits a file or runs a command
	// (knotd answers by the agent's permissions).
	Mode string
	// LostAtPrompt reports that the agent's error answering the prompt of
	// a resumed session means it no longer has the conversation; it is
	// given the error's text (message, code and data). Nil: never.
	LostAtPrompt func(errText string) bool
}
