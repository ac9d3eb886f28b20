package agentrun

import (
	"errors"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestAgent_Validate(t *testing.T) {
	tests := []struct {
		name  string
		agent Agent
		want  []string // substrings of the error; nil means valid
	}{
		{name: "zero is digest", agent: Agent{}},
		{name: "named digest", agent: Agent{Name: "digest"}},
		{name: "preset digest", agent: Agent{Name: "notes", Preset: "digest"}},
		{name: "claude", agent: Agent{Preset: "claude", Model: "sonnet", Timeout: 5 * time.Minute, Instructions: "be brief"}},
		{name: "claude via npx", agent: Agent{Preset: "claude", Command: []string{"npx", "@anthropic-ai/claude-code"}}},
		{name: "ollama", agent: Agent{Preset: "ollama", Model: "llama3.2"}},
		{name: "command text", agent: Agent{Name: "mytool", Command: []string{"mytool", "--reply"}, Prompt: PromptStdin}},
		{name: "command json", agent: Agent{Command: []string{"t"}, Output: OutputJSON, Reply: "/result", Session: "/id",
			ResumeCommand: []string{"t", "--resume", "{resume}"}}},
		{name: "command arg", agent: Agent{Command: []string{"t", "--", "{prompt}"}, Prompt: PromptArg}},
		{name: "command file", agent: Agent{Command: []string{"t", "--file={prompt_file}"}, Prompt: PromptFile}},
		{name: "permissions edit", agent: Agent{Preset: "codex", Permissions: PermEdit}},
		{name: "permissions full", agent: Agent{Preset: "gemini", Permissions: PermFull}},
		{name: "model on the gemini preset (--model)", agent: Agent{Preset: PresetGemini, Model: "gemini-2.5-pro"}},
		{name: "permissions read-only", agent: Agent{Preset: "claude", Permissions: PermReadOnly}},
		{name: "ask on claude", agent: Agent{Preset: PresetClaude, Permissions: PermAsk}},
		{name: "ask on gemini", agent: Agent{Preset: PresetGemini, Permissions: PermAsk}},
		{name: "ask on codex-acp", agent: Agent{Preset: PresetCodexACP, Permissions: PermAsk}},
		{name: "ask on claude-acp", agent: Agent{Preset: PresetClaudeACP, Permissions: PermAsk}},
		{name: "ask on opencode", agent: Agent{Preset: PresetOpenCode, Permissions: PermAsk}},
		{name: "ask on protocol acp", agent: Agent{Command: []string{"agent"}, Protocol: ProtocolACP, Permissions: PermAsk}},
		{name: "env", agent: Agent{Preset: "codex", Env: map[string]string{"CODEX_HOME": "/x"}, EnvRemove: []string{"OPENAI_API_KEY"}}},

		{name: "bad resume_prompt", agent: Agent{Preset: "claude", ResumePrompt: "diff"}, want: []string{`resume_prompt "diff" is not one of change, whole`}},
		{name: "negative max_context", agent: Agent{Preset: "claude", MaxContext: -2}, want: []string{"max_context -2 is negative"}},
		{name: "named without preset", agent: Agent{Name: "mytool"}, want: []string{`"mytool"`, "needs a preset"}},
		{name: "unknown preset", agent: Agent{Preset: "gpt"}, want: []string{`unknown preset "gpt"`, "claude, codex"}},
		{name: "digest with command", agent: Agent{Preset: "digest", Command: []string{"x"}}, want: []string{"takes no command"}},
		{name: "preset with prompt mode", agent: Agent{Preset: "claude", Prompt: PromptArg}, want: []string{"fixed by the claude preset"}},
		{name: "ollama without model", agent: Agent{Preset: "ollama"}, want: []string{"needs a model"}},
		{name: "empty program", agent: Agent{Command: []string{""}}, want: []string{"command[0]"}},
		{name: "empty preset program", agent: Agent{Preset: "codex", Command: []string{""}}, want: []string{"command[0]"}},
		{name: "bad prompt mode", agent: Agent{Command: []string{"t"}, Prompt: "pipe"}, want: []string{`prompt "pipe"`}},
		{name: "bad output", agent: Agent{Command: []string{"t"}, Output: "yaml"}, want: []string{`output "yaml"`}},
		{name: "json without reply", agent: Agent{Command: []string{"t"}, Output: OutputJSON}, want: []string{"needs a reply JSON pointer"}},
		{name: "pointer with text", agent: Agent{Command: []string{"t"}, Reply: "/r"}, want: []string{"need output: json"}},
		{name: "bad pointer", agent: Agent{Command: []string{"t"}, Output: OutputJSON, Reply: "result"}, want: []string{"reply: JSON pointer", "start with '/'"}},
		{name: "prompt placeholder in stdin mode", agent: Agent{Command: []string{"t", "{prompt}"}}, want: []string{"uses {prompt} but prompt is stdin"}},
		{name: "file placeholder in arg mode", agent: Agent{Command: []string{"t", "{prompt_file}"}, Prompt: PromptArg}, want: []string{"uses {prompt_file}"}},
		{name: "resume placeholder in command", agent: Agent{Command: []string{"t", "{resume}"}}, want: []string{"only resume_command"}},
		{name: "resume command without session", agent: Agent{Command: []string{"t"}, ResumeCommand: []string{"t"}}, want: []string{"needs a session JSON pointer"}},
		{name: "nul in argv", agent: Agent{Command: []string{"t", "a\x00b"}}, want: []string{"command[1] contains a NUL"}},
		{name: "flag model", agent: Agent{Preset: "claude", Model: "--dangerously-skip-permissions"}, want: []string{"may not start with '-'"}},
		{name: "tiny timeout", agent: Agent{Preset: "claude", Timeout: 600}, want: []string{"under a second", "10m"}},
		{name: "negative timeout", agent: Agent{Preset: "claude", Timeout: -time.Second}, want: []string{"negative"}},
		{name: "huge instructions", agent: Agent{Preset: "claude", Instructions: strings.Repeat("x", MaxInstructions+1)}, want: []string{"instructions are"}},
		{name: "knot env", agent: Agent{Preset: "claude", Env: map[string]string{"KNOT_STRAND": "x"}}, want: []string{"KNOT_STRAND is set by knotd"}},
		{name: "bad env name", agent: Agent{Preset: "claude", Env: map[string]string{"A=B": "x"}, EnvRemove: []string{""}}, want: []string{`"A=B" is not a valid`, `env_remove: "" is not`}},
		{name: "bad permissions", agent: Agent{Preset: "claude", Permissions: "write"}, want: []string{`permissions "write"`, "read-only, edit, full, ask"}},
		{name: "permissions on a command", agent: Agent{Command: []string{"t"}, Permissions: PermEdit}, want: []string{"permissions apply to the claude, codex, gemini, claude-acp, codex-acp and opencode presets"}},
		{name: "model on an ACP preset", agent: Agent{Preset: PresetCodexACP, Model: "gpt-5"}, want: []string{"model does not apply to the codex-acp preset"}},
		{name: "permissions on ollama", agent: Agent{Preset: "ollama", Model: "m", Permissions: PermReadOnly}, want: []string{"permissions apply to"}},
		{name: "ask on codex", agent: Agent{Preset: PresetCodex, Permissions: PermAsk}, want: []string{"permissions: ask needs an agent that can ask for permission: the claude preset or an ACP agent (for Codex: preset codex-acp)"}},
		{name: "ask on llm", agent: Agent{Preset: PresetLLM, Permissions: PermAsk}, want: []string{"permissions: ask needs an agent that can ask for permission: the claude preset or an ACP agent (for Codex: preset codex-acp)"}},
		{name: "ask on ollama", agent: Agent{Preset: PresetOllama, Model: "m", Permissions: PermAsk}, want: []string{"permissions: ask needs an agent that can ask for permission: the claude preset or an ACP agent (for Codex: preset codex-acp)"}},
		{name: "ask on digest", agent: Agent{Preset: PresetDigest, Permissions: PermAsk}, want: []string{"permissions: ask needs an agent that can ask for permission: the claude preset or an ACP agent (for Codex: preset codex-acp)"}},
		{name: "ask on a command", agent: Agent{Command: []string{"t"}, Permissions: PermAsk}, want: []string{"permissions: ask needs an agent that can ask for permission: the claude preset or an ACP agent (for Codex: preset codex-acp)"}},
		{name: "several problems", agent: Agent{Command: []string{"t"}, Prompt: "x", Output: "y"}, want: []string{`prompt "x"`, `output "y"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.agent.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v; want nil", tt.agent, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidAgent) {
				t.Fatalf("Validate(%+v) = %v; want an ErrInvalidAgent", tt.agent, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate(%+v) = %q; want it to mention %q", tt.agent, err, w)
				}
			}
		})
	}
}

func TestValidateModel(t *testing.T) {
	tests := []struct {
		model string
		ok    bool
	}{
		{"sonnet", true},
		{"claude-sonnet-4-5", true},
		{"llama3.2:latest", true},
		{"openai/gpt-4o", true},
		{"gemini-2.5-pro", true},
		{"", false},
		{"--dangerously-skip-permissions", false},
		{"-m", false},
		{"two words", false},
		{"line\nbreak", false},
		{"nul\x00", false},
		{"tab\t", false},
		{"\xff", false},
		{strings.Repeat("m", 201), false},
	}
	for _, tt := range tests {
		err := ValidateModel(tt.model)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateModel(%q) = %v; want ok=%v", tt.model, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidModel) {
			t.Errorf("ValidateModel(%q) = %v; want an ErrInvalidModel", tt.model, err)
		}
	}
}

func TestAgent_YAML(t *testing.T) {
	const doc = `
claude:
  preset: claude
  model: sonnet
  timeout: 10m
  instructions: "You are reviewing my notes..."
  resume_prompt: whole
  max_context: 120000
mytool:
  command: ["mytool", "--reply"]
  prompt: stdin
  output: json
  reply: /answer
  session: /conversation
  resume_command: ["mytool", "--reply", "--continue", "{resume}"]
  env: {MYTOOL_COLOR: never}
  env_remove: [OPENAI_API_KEY]
  max_context: none
`
	var agents map[string]Agent
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&agents); err != nil {
		t.Fatal(err)
	}
	c := agents["claude"]
	if c.Preset != "claude" || c.Model != "sonnet" || c.Timeout != 10*time.Minute || c.Instructions != "You are reviewing my notes..." ||
		c.ResumePrompt != ResumeWhole || c.MaxContext != 120000 {
		t.Errorf("claude = %+v", c)
	}
	m := agents["mytool"]
	if m.Prompt != PromptStdin || m.Output != OutputJSON || m.Reply != "/answer" || m.Session != "/conversation" ||
		len(m.ResumeCommand) != 4 || m.Env["MYTOOL_COLOR"] != "never" || m.EnvRemove[0] != "OPENAI_API_KEY" || m.MaxContext != NoContextLimit {
		t.Errorf("mytool = %+v", m)
	}
	for name, a := range agents {
		a.Name = name
		if err := a.Validate(); err != nil {
			t.Errorf("Validate(%s) = %v", name, err)
		}
	}
}

func TestAgent_KeepsConversation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		agent Agent
		want  bool
	}{
		{"digest", Agent{}, false},
		{"claude", Agent{Preset: PresetClaude}, true},
		{"codex", Agent{Preset: PresetCodex}, true},
		{"gemini", Agent{Preset: PresetGemini}, true},
		{"llm", Agent{Preset: PresetLLM}, true},
		{"ollama", Agent{Preset: PresetOllama}, false},
		{"a command", Agent{Command: []string{"my-agent", "--json"}}, false},
		{"a command handed the session", Agent{Command: []string{"my-agent", "--conversation={session}"}}, true},
		{"a command that resumes", Agent{Command: []string{"my-agent"}, Output: "json", Session: "/id", ResumeCommand: []string{"my-agent", "--resume", "{resume}"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.agent.KeepsConversation(); got != tc.want {
				t.Errorf("KeepsConversation() = %v; want %v", got, tc.want)
			}
		})
	}
}

// TestContextLimit: max_context, else the preset's default, else a share
// of the size an ACP agent reports; none is none whatever the preset.
func TestContextLimit(t *testing.T) {
	tests := []struct {
		name   string
		agent  Agent
		window int64
		want   int64
	}{
		{"claude default", Agent{Preset: PresetClaude}, 0, 160_000},
		{"claude set", Agent{Preset: PresetClaude, MaxContext: 50_000}, 0, 50_000},
		{"claude none", Agent{Preset: PresetClaude, MaxContext: NoContextLimit}, 0, 0},
		{"gemini default", Agent{Preset: PresetGemini}, 1_000_000, 800_000},
		{"acp reported size", Agent{Command: []string{"goose", "acp"}, Protocol: ProtocolACP}, 200_000, 160_000},
		{"acp no size", Agent{Command: []string{"goose", "acp"}, Protocol: ProtocolACP}, 0, 0},
		{"command", Agent{Command: []string{"t", "{session}"}}, 0, 0},
		{"codex default", Agent{Preset: PresetCodex}, 0, 200_000},
		{"codex none", Agent{Preset: PresetCodex, MaxContext: NoContextLimit}, 0, 0},
	}
	for _, tt := range tests {
		if got := tt.agent.contextLimit(newDriver(&tt.agent, tt.agent.kind()), tt.window); got != tt.want {
			t.Errorf("%s: contextLimit = %d; want %d", tt.name, got, tt.want)
		}
	}
	for _, bad := range []string{"max_context: -5", "max_context: lots", "max_context: [1]"} {
		var v struct {
			C ContextLimit `yaml:"max_context"`
		}
		if err := yaml.Unmarshal([]byte(bad), &v); err == nil {
			t.Errorf("%q decoded as %d; want an error", bad, v.C)
		}
	}
}
