package agentrun

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/agentrun/internal/argtemplate"
	"github.com/knotd/knotd/internal/agentrun/internal/jsonpointer"
	"github.com/knotd/knotd/internal/agents/kit"
)

// DefaultTimeout is the wall-clock limit of a run whose agent sets none.
const DefaultTimeout = 10 * time.Minute

// MaxInstructions is the longest Instructions an agent may have, in bytes.
const MaxInstructions = 64 << 10

// The names of the built-in agent and of the presets, as written after
// "preset:" in the configuration.
const (
	PresetDigest = "digest"
	PresetClaude = "claude"
	PresetCodex  = "codex"
	PresetGemini = "gemini"
	PresetLLM    = "llm"
	PresetOllama = "ollama"
	// These, and gemini, are the presets on the ACP driver (preset_acp.go).
	PresetClaudeACP = "claude-acp"
	PresetCodexACP  = "codex-acp"
	PresetOpenCode  = "opencode"
)

// Presets lists every preset name, the built-in digest first.
func Presets() []string {
	return []string{PresetDigest, PresetClaude, PresetCodex, PresetGemini, PresetLLM, PresetOllama, PresetClaudeACP, PresetCodexACP, PresetOpenCode}
}

// PromptMode says how a generic command receives its prompt.
type PromptMode = kit.PromptMode

// The prompt modes (see kit). The zero value means PromptStdin.
const (
	PromptStdin = kit.PromptStdin
	PromptArg   = kit.PromptArg
	PromptFile  = kit.PromptFile
)

// OutputFormat says how a generic command's standard output is read.
type OutputFormat string

// The output formats. The zero value means OutputText.
const (
	// OutputText takes all of standard output as the reply.
	OutputText OutputFormat = "text"
	// OutputJSON reads standard output as one JSON document or a sequence
	// of them (JSON lines) and takes the reply and the resume handle from
	// the Reply and Session JSON pointers; with several documents the last
	// one that has a value wins.
	OutputJSON OutputFormat = "json"
)

// Permissions says what an agent CLI may do on its own during a run, with
// nobody there to approve it. Each preset maps it to its CLI's own flags.
type Permissions = kit.Permissions

// The permission levels (see kit). The zero value means PermReadOnly.
const (
	PermReadOnly = kit.PermReadOnly
	PermEdit     = kit.PermEdit
	PermFull     = kit.PermFull
	PermAsk      = kit.PermAsk
)

// Agent is one agent definition, as the configuration loader reads it from
// YAML (docs/agents.md). The zero Agent is the built-in digest agent.
type Agent struct {
	// Name is the agent's name (the key under "agents:"); the loader fills
	// it in. It is used in messages only.
	Name string `yaml:"name,omitempty"`
	// Preset names a built-in agent or preset: digest, claude, codex,
	// gemini, llm, ollama, claude-acp, codex-acp or opencode. Empty with
	// no Command means digest.
	Preset string `yaml:"preset,omitempty"`
	// Command is the argv of a generic command. With a Preset it replaces
	// the preset's program (for example ["/opt/claude/bin/claude"] or
	// ["npx", "@anthropic-ai/claude-code"]) and the preset adds its own
	// arguments after it, with no template values substituted. A generic
	// command may use the template values listed in internal/argtemplate. The
	// program is looked up in knotd's own PATH.
	Command []string `yaml:"command,omitempty"`
	// ResumeCommand is the argv a generic command runs instead of Command
	// once the agent has reported a resume handle; it may use "{resume}".
	// It needs output json and a Session pointer.
	ResumeCommand []string `yaml:"resume_command,omitempty"`
	// Prompt is how a generic command receives the prompt (default stdin).
	// Presets fix their own.
	Prompt PromptMode `yaml:"prompt,omitempty"`
	// Output is how a generic command's output is read (default text).
	Output OutputFormat `yaml:"output,omitempty"`
	// Reply is the RFC 6901 JSON pointer to the reply in json output, for
	// example "/result". Required with output json.
	Reply string `yaml:"reply,omitempty"`
	// Session is the JSON pointer to the agent's resume handle in json
	// output, for example "/session_id". Optional.
	Session string `yaml:"session,omitempty"`
	// Model is the model name handed to the agent as one argv element. A
	// strand's knot_model overrides it.
	Model string `yaml:"model,omitempty"`
	// Timeout is the run's wall-clock limit (default DefaultTimeout).
	Timeout time.Duration `yaml:"timeout,omitempty"`
	// Instructions go to the CLI's system-prompt flag where it has one,
	// otherwise before the Event Context block.
	Instructions string `yaml:"instructions,omitempty"`
	// Env adds or replaces environment variables for the agent. The KNOT_
	// variables are knotd's and cannot be set here.
	Env map[string]string `yaml:"env,omitempty"`
	// EnvRemove names variables of knotd's own environment that the agent
	// must not see (for example API keys meant for another tool).
	EnvRemove []string `yaml:"env_remove,omitempty"`
	// Permissions is what the agent may do unattended (default
	// read-only). Only the presets whose CLI has tools (claude, codex,
	// gemini) and ACP commands take it: a plain command's own flags decide
	// what it may do.
	Permissions Permissions `yaml:"permissions,omitempty"`
	// Protocol, on a generic command, says how knotd talks to it: ""
	// (the prompt in, the reply out, per Prompt and Output) or ProtocolACP.
	Protocol string `yaml:"protocol,omitempty"`
	// ResumePrompt is what a turn that continues the conversation is
	// given: ResumeChange (the default: the change since the last answer)
	// or ResumeWhole (the whole note, as a new conversation gets it).
	ResumePrompt string `yaml:"resume_prompt,omitempty"`
	// MaxContext is the conversation's context limit in tokens: past it,
	// the next turn starts a new conversation (see context.go). Zero is
	// the preset's default, NoContextLimit none.
	MaxContext ContextLimit `yaml:"max_context,omitempty"`
}

// ProtocolACP is the protocol of a command that speaks the Agent Client
// Protocol on its standard input and output (goose acp, opencode acp,
// copilot --acp…): knotd is its ACP client (see acp.go).
const ProtocolACP = "acp"

// acp reports whether the agent is a generic command spoken to in ACP.
func (a *Agent) acp() bool { return a.kind() == "" && a.Protocol == ProtocolACP }

// permissions returns the agent's permission level, read-only by default.
func (a *Agent) permissions() Permissions {
	if a.Permissions == "" {
		return PermReadOnly
	}
	return a.Permissions
}

// hasTools reports whether the agent's CLI can act on files or run
// commands, so that Permissions applies to it.
func (a *Agent) hasTools() bool {
	switch a.kind() {
	case PresetClaude, PresetCodex, PresetGemini, PresetClaudeACP, PresetCodexACP, PresetOpenCode:
		return true
	}
	return a.acp()
}

// canAsk reports whether the agent can ask knotd for permission while it
// runs (permissions: ask): the claude preset (knotd's PreToolUse hook) and
// every ACP agent (session/request_permission).
func (a *Agent) canAsk() bool {
	return a.kind() == PresetClaude || acpPresets[a.kind()] != nil || a.acp()
}

// errAskNeedsAsker is what permissions: ask on another agent says.
const errAskNeedsAsker = "permissions: ask needs an agent that can ask for permission: the claude preset or an ACP agent (for Codex: preset codex-acp)"

// ErrInvalidAgent is wrapped by every error about an agent definition.
var ErrInvalidAgent = errors.New("agentrun: invalid agent")

// ErrInvalidModel is wrapped by every error about a model name.
var ErrInvalidModel = errors.New("agentrun: invalid model name")

// kind returns the preset that runs a, "" for a generic command.
func (a *Agent) kind() string {
	if a.Preset != "" {
		return a.Preset
	}
	if len(a.Command) == 0 {
		return PresetDigest
	}
	return ""
}

// KeepsConversation reports whether the agent keeps a conversation that a
// strand's session names: a preset that continues one (claude, codex,
// gemini, llm), or a command with a resume_command or one that is handed
// the session ({session}). The built-in digest, ollama and other commands
// keep none, and knotd writes no knot_session into a strand for them.
func (a *Agent) KeepsConversation() bool {
	switch k := a.kind(); k {
	case PresetDigest:
		return false
	case "":
		if a.acp() {
			return true
		}
		if len(a.ResumeCommand) > 0 {
			return true
		}
		for _, el := range a.Command {
			if strings.Contains(el, "{session}") {
				return true
			}
		}
		return false
	default:
		return newDriver(a, k).resumes()
	}
}

// Identity identifies the agent whose conversation a turn continues: its
// name, preset and command lines (not its model, which a conversation
// outlives), as a short hash. A turn of an agent with another identity
// starts a conversation of its own.
func (a *Agent) Identity() string {
	h := sha256.New()
	for _, s := range append([]string{a.Name, a.kind(), a.Protocol, "\x00command"}, a.Command...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write([]byte("\x00resume_command"))
	for _, s := range a.ResumeCommand {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// label names the agent in messages.
func (a *Agent) label() string {
	switch {
	case a.Name != "":
		return a.Name
	case a.kind() != "":
		return a.kind()
	}
	return "command"
}

// Validate checks the definition and reports every problem at once, each
// saying what to change. A nil error means Run can use the agent.
func (a *Agent) Validate() error {
	var probs []string
	add := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }

	switch k := a.kind(); {
	case a.Preset != "" && !slices.Contains(Presets(), a.Preset):
		add("unknown preset %q (want one of %s, or a command)", a.Preset, strings.Join(Presets(), ", "))
	case k == PresetDigest:
		if a.Name != "" && a.Name != PresetDigest && a.Preset == "" {
			add("needs a preset (%s) or a command", strings.Join(Presets(), ", "))
		}
		if len(a.Command) > 0 {
			add("the built-in digest agent runs inside knotd and takes no command")
		}
	case k != "":
		if a.Prompt != "" || a.Output != "" || a.Reply != "" || a.Session != "" || len(a.ResumeCommand) > 0 {
			add("prompt, output, reply, session and resume_command are fixed by the %s preset; remove them or use a command instead of the preset", k)
		}
		if p := acpPresets[k]; p != nil && p.ModelFlag == "" && a.Model != "" {
			add("model does not apply to the %s preset (knotd does not choose an ACP agent's model); set the model in the agent's own configuration", k)
		}
		if k == PresetOllama && a.Model == "" {
			add("the ollama preset needs a model (ollama run MODEL), for example model: llama3.2")
		}
	case a.Protocol != "" && a.Protocol != ProtocolACP:
		add("protocol %q is not acp (remove it for a command that takes the prompt and prints the reply)", a.Protocol)
	case a.acp():
		if a.Command[0] == "" {
			add("command[0] (the program) is empty")
		}
		if a.Prompt != "" || a.Output != "" || a.Reply != "" || a.Session != "" || len(a.ResumeCommand) > 0 {
			add("prompt, output, reply, session and resume_command do not apply to protocol: acp (the prompt and reply go over ACP, and the agent's session id is the resume handle); remove them")
		}
		for _, el := range a.Command {
			if name := argtemplate.Placeholder.FindStringSubmatch(el); name != nil && slices.Contains(argtemplate.Names(), name[1]) {
				add("command uses {%s}, but protocol: acp fills in no values (the prompt and session go over ACP); remove it", name[1])
				break
			}
		}
		if a.Model != "" {
			add("model does not apply to protocol: acp (knotd does not choose an ACP agent's model); set the model in the agent's own configuration or in its command")
		}
	default:
		a.validateCommand(add)
	}
	if a.Protocol != "" && a.kind() != "" {
		add("protocol applies to a command; the %s preset fixes its own", a.kind())
	}
	if len(a.Command) > 0 && a.kind() != "" && a.Command[0] == "" {
		add("command[0] (the program) is empty")
	}
	if err := checkArgv("command", a.Command); err != nil {
		add("%v", err)
	}
	if a.Model != "" {
		if err := ValidateModel(a.Model); err != nil {
			add("%v", err)
		}
	}
	switch {
	case a.Timeout < 0:
		add("timeout %v is negative", a.Timeout)
	case a.Timeout > 0 && a.Timeout < time.Second:
		add("timeout %v is under a second; write it with a unit, for example timeout: 10m", a.Timeout)
	}
	if len(a.Instructions) > MaxInstructions {
		add("instructions are %d bytes, over the %d-byte limit", len(a.Instructions), MaxInstructions)
	}
	if strings.ContainsRune(a.Instructions, 0) || !utf8.ValidString(a.Instructions) {
		add("instructions must be valid UTF-8 text without NUL bytes")
	}
	switch a.Permissions {
	case "", PermReadOnly, PermEdit, PermFull:
		if a.Permissions != "" && !a.hasTools() {
			add("permissions apply to the claude, codex, gemini, claude-acp, codex-acp and opencode presets and to protocol: acp commands, whose agents ask before they edit files or run commands; remove it (a command's own flags decide what it may do)")
		}
	case PermAsk:
		if !a.canAsk() {
			add("%s", errAskNeedsAsker)
		}
	default:
		add("permissions %q is not one of read-only, edit, full, ask", a.Permissions)
	}
	switch a.ResumePrompt {
	case "", ResumeChange, ResumeWhole:
	default:
		add("resume_prompt %q is not one of change, whole", a.ResumePrompt)
	}
	if a.MaxContext < NoContextLimit {
		add("max_context %d is negative (a number of tokens, or none)", a.MaxContext)
	}
	a.validateEnv(add)
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("%w %q: %s", ErrInvalidAgent, a.label(), strings.Join(probs, "; "))
}

func (a *Agent) validateCommand(add func(string, ...any)) {
	if a.Command[0] == "" {
		add("command[0] (the program) is empty")
	}
	switch a.Prompt {
	case "", PromptStdin, PromptArg, PromptFile:
	default:
		add("prompt %q is not one of stdin, arg, file", a.Prompt)
	}
	switch a.Output {
	case "", OutputText:
		if a.Reply != "" || a.Session != "" {
			add("reply and session JSON pointers need output: json")
		}
	case OutputJSON:
		if a.Reply == "" {
			add(`output json needs a reply JSON pointer, for example reply: "/result"`)
		}
	default:
		add("output %q is not one of text, json", a.Output)
	}
	for _, p := range []struct{ name, ptr string }{{"reply", a.Reply}, {"session", a.Session}} {
		if _, err := jsonpointer.Parse(p.ptr); err != nil {
			add("%s: %v", p.name, err)
		}
	}
	if len(a.ResumeCommand) > 0 {
		if a.Session == "" {
			add("resume_command needs a session JSON pointer to read the resume handle from")
		}
		if a.ResumeCommand[0] == "" {
			add("resume_command[0] (the program) is empty")
		}
		if err := checkArgv("resume_command", a.ResumeCommand); err != nil {
			add("%v", err)
		}
	}
	mode := a.Prompt
	if mode == "" {
		mode = PromptStdin
	}
	check := func(field string, argv []string, resumeOK bool) {
		for _, el := range argv {
			if strings.Contains(el, "{prompt}") && mode != PromptArg {
				add("%s uses {prompt} but prompt is %s (use prompt: arg)", field, mode)
			}
			if strings.Contains(el, "{prompt_file}") && mode != PromptFile {
				add("%s uses {prompt_file} but prompt is %s (use prompt: file)", field, mode)
			}
			if strings.Contains(el, "{resume}") && !resumeOK {
				add("%s uses {resume}, which only resume_command may use", field)
			}
		}
	}
	check("command", a.Command, false)
	check("resume_command", a.ResumeCommand, true)
}

func (a *Agent) validateEnv(add func(string, ...any)) {
	for _, k := range sortedKeys(a.Env) {
		if err := checkEnvName(k); err != nil {
			add("env: %v", err)
		} else if isKnotVar(k) {
			add("env: %s is set by knotd itself", k)
		}
		if strings.ContainsRune(a.Env[k], 0) {
			add("env: the value of %s contains a NUL byte", k)
		}
	}
	for _, k := range a.EnvRemove {
		if err := checkEnvName(k); err != nil {
			add("env_remove: %v", err)
		} else if isKnotVar(k) {
			add("env_remove: %s is set by knotd itself", k)
		}
	}
}

func checkArgv(field string, argv []string) error {
	for i, el := range argv {
		if strings.ContainsRune(el, 0) {
			return fmt.Errorf("%s[%d] contains a NUL byte", field, i)
		}
	}
	return nil
}

func checkEnvName(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("%q is not a valid variable name", k)
	}
	return nil
}

// ValidateModel checks a model name before it becomes one argv element: it
// must not be empty, start with "-" (it would be read as a flag, as in
// knot_model: "--dangerously-skip-permissions"), contain whitespace or
// control characters, or be longer than 200 bytes. Use it for a strand's
// knot_model as well as for configured models.
func ValidateModel(model string) error {
	return checkArgValue("model", model, ErrInvalidModel)
}

// checkArgValue applies the rules of ValidateModel to any value that knotd
// passes as one argv element after a flag (models, session ids, handles).
func checkArgValue(what, v string, sentinel error) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", sentinel, v, why) }
	switch {
	case v == "":
		return bad(what + " is empty")
	case len(v) > 200:
		return bad(fmt.Sprintf("%s is %d bytes long (at most 200)", what, len(v)))
	case strings.HasPrefix(v, "-"):
		return bad("a " + what + " may not start with '-': it would be read as a flag")
	case !utf8.ValidString(v):
		return bad(what + " is not valid UTF-8")
	}
	for _, r := range v {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return bad(fmt.Sprintf("a %s may not contain whitespace or control characters (found %q)", what, r))
		}
	}
	return nil
}
