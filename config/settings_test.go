package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/agentrun"
)

func ptr[T any](v T) *T { return &v }

func TestParseSettings(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want Settings
	}{
		{"empty", "", Settings{}},
		{"comments only", "# nothing here\n", Settings{}},
		{"design example", `
default_agent: claude
debounce: 2s
concurrency: 2
agents:
  claude:
    preset: claude          # claude | codex | gemini | llm | ollama
    model: sonnet
    timeout: 10m
    instructions: "You are reviewing my notes..."
  mytool:                   # a generic command
    command: ["mytool", "--reply"]
    prompt: stdin           # stdin | arg | file
    output: text            # text | json (with reply/session JSON paths)
`, Settings{
			DefaultAgent: ptr("claude"),
			Debounce:     ptr(2 * time.Second),
			Concurrency:  ptr(2),
			Agents: map[string]agentrun.Agent{
				"claude": {Preset: "claude", Model: "sonnet", Timeout: 10 * time.Minute, Instructions: "You are reviewing my notes..."},
				"mytool": {Command: []string{"mytool", "--reply"}, Prompt: agentrun.PromptStdin, Output: agentrun.OutputText},
			},
		}},
		{"every scalar", `
max_wait: 1m30s
timeout: 5m
poll: 10s
ignore: ["drafts/", "*.private.md"]
obsidian_dir: .obsidian-mobile
limits:
  max_strand_size: 1MiB
  content: 256KiB
  diff: 65536
  tieoff_sections: 3
  tieoff_bytes: 32KiB
  prompt: 1GiB
`, Settings{
			MaxWait:     ptr(90 * time.Second),
			Timeout:     ptr(5 * time.Minute),
			Poll:        ptr(10 * time.Second),
			Ignore:      []string{"drafts/", "*.private.md"},
			ObsidianDir: ptr(".obsidian-mobile"),
			Limits: LimitSettings{
				MaxStrandSize: ptr(Size(1 << 20)), Content: ptr(Size(256 << 10)), Diff: ptr(Size(65536)),
				TieOffSections: ptr(3), TieOffBytes: ptr(Size(32 << 10)), Prompt: ptr(Size(1 << 30)),
			},
		}},
		{"env", `
agents:
  t:
    command: [t]
    env: {API_BASE: "http://localhost"}
    env_remove: [OPENAI_API_KEY]
`, Settings{Agents: map[string]agentrun.Agent{"t": {
			Command: []string{"t"}, Env: map[string]string{"API_BASE": "http://localhost"}, EnvRemove: []string{"OPENAI_API_KEY"},
		}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSettings("config.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatalf("parseSettings(%q) = %v", tt.yaml, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseSettings(%q) =\n%+v; want\n%+v", tt.yaml, got, tt.want)
			}
		})
	}
}

func TestParseSettings_Errors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"typo", "debounce: 2s\ndebounse: 3s\n", []string{"config.yaml", "line 2: unknown key \"debounse\""}},
		{"typo in an agent", "agents:\n  a:\n    comand: [x]\n", []string{"line 3", "comand"}},
		{"bad duration", "debounce: 2 seconds\n", []string{"line 1", "2 seconds"}},
		{"bare number duration", "debounce: 2\n", []string{"line 1"}},
		{"bad size", "limits:\n  diff: 64KB\n", []string{"line 2", "64KB", "KiB"}},
		{"negative size", "limits:\n  diff: -1\n", []string{"line 2"}},
		{"not a mapping", "- a\n- b\n", []string{"config.yaml"}},
		{"duplicate key", "debounce: 1s\ndebounce: 2s\n", []string{"line 2", "already defined"}},
		{"two documents", "debounce: 1s\n---\ndebounce: 2s\n", []string{"more than one YAML document"}},
		{"bad agent name", "agents:\n  -x:\n    command: [x]\n", []string{`"-x" is not a valid agent name`}},
		{"agent name mismatch", "agents:\n  a:\n    name: b\n    command: [x]\n", []string{"the key is the name"}},
		{"invalid yaml", "debounce: [\n", []string{"config.yaml", "line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseSettings("config.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatalf("parseSettings(%q) = nil error; want one", tt.yaml)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("parseSettings(%q) = %q; want it to mention %q", tt.yaml, err, w)
				}
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
		ok   bool
	}{
		{"0", 0, true},
		{"4096", 4096, true},
		{"64KiB", 64 << 10, true},
		{"2 MiB", 2 << 20, true},
		{"1GiB", 1 << 30, true},
		{"", 0, false},
		{"1.5MiB", 0, false},
		{"64KB", 0, false},
		{"-1", 0, false},
		{"99999999999GiB", 0, false},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func FuzzParseSettings(f *testing.F) {
	f.Add([]byte("default_agent: claude\ndebounce: 2s\nagents:\n  a:\n    command: [x]\n"))
	f.Add([]byte("limits:\n  diff: 64KiB\n"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseSettings("fuzz.yaml", b)
		if err != nil {
			return
		}
		for k := range s.Agents {
			if checkAgentName(k) != nil {
				t.Errorf("parseSettings(%q) accepted agent name %q", b, k)
			}
		}
	})
}
