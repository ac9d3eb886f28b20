package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/testutil"
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
		{"typo in budget", "debounce: 2s\nbudget: {day_run: 3}\n", []string{"line 2: budget: unknown key \"day_run\"; did you mean day_runs?"}},
		{"typo in breakers", "breakers:\n  failurs: 3\n", []string{"line 2: breakers: unknown key \"failurs\"; did you mean"}},
		{"bad duration", "debounce: 2 seconds\n", []string{"line 1", "2 seconds"}},
		{"bare number duration", "debounce: 2\n", []string{"line 1"}},
		{"bad size", "limits:\n  diff: 64KB\n", []string{"line 2", "64KB", "KiB"}},
		{"negative size", "limits:\n  diff: -1\n", []string{"line 2"}},
		{"not a mapping", "- a\n- b\n", []string{"config.yaml"}},
		{"duplicate key", "debounce: 1s\ndebounce: 2s\n", []string{"line 2", "given twice (first at line 1)"}},
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

// TestParseSettings_Messages: the exact message of each kind of mistake,
// in testdata/errors.golden: the file, the line where the mistake is
// (also for indentation mistakes, which yaml.v3 reports at the line where
// the enclosing block begins), the key, and what was expected, with no Go
// type names.
func TestParseSettings_Messages(t *testing.T) {
	tests := []struct{ name, yaml string }{
		{"agents as a list", "debounce: 2s\nagents:\n  - claude\n"},
		{"key indented less than its siblings", "default_agent: mine\nagents:\n  mine:\n    command: [echo]\n   prompt: stdin\ndebounce: 2s\n"},
		{"key indented more than its siblings", "debounce: 2s\nagents:\n  mine:\n    command: [echo]\n    prompt: stdin\n      output: text\n"},
		{"top-level key indented", "debounce: 2s\n  max_wait: 5s\n"},
		{"tab in the indentation", "agents:\n  mine:\n    command: [echo]\n\tprompt: stdin\n"},
		{"list item dedented", "ignore:\n  - drafts/\n - old/\n"},
		{"list not closed", "ignore: [drafts/, old/\ndebounce: 2s\n"},
		{"quote not closed", "default_agent: \"mine\ndebounce: 2s\n"},
		{"reserved character", "default_agent: @mine\n"},
		{"value with a colon", "agents:\n  mine:\n    command: [echo]\n    instructions: note: be brief\n"},
		{"duration without a unit", "debounce: 2\n"},
		{"not a duration", "max_wait: soon\n"},
		{"not a whole number", "concurrency: lots\n"},
		{"not true or false", "run_empty: sometimes\n"},
		{"a string where a list goes", "ignore: drafts/\n"},
		{"a command as a string", "agents:\n  mine:\n    command: mytool --reply\n"},
		{"an agent's timeout without a unit", "agents:\n  mine:\n    preset: claude\n    timeout: 600\n"},
		{"env as a list", "agents:\n  mine:\n    preset: claude\n    env: [A=1]\n"},
		{"an agent as a string", "agents:\n  mine: claude\n"},
		{"a bad size", "limits:\n  content: big\n"},
		{"a list as a size", "limits:\n  content: [1]\n"},
		{"unknown key", "debounse: 3s\n"},
		{"unknown agent key", "agents:\n  mine:\n    comand: [x]\n"},
		{"unknown limit", "limits:\n  contents: 1KiB\n"},
		{"unknown budget key", "budget:\n  day_run: 3\n"},
		{"budget as a number", "budget: 3\n"},
		{"unknown key far from any", "frobnicate: 1\n"},
		{"the file is a list", "- a\n- b\n"},
		{"duplicate key", "debounce: 1s\ndebounce: 2s\n"},
		{"several mistakes", "debounce: 2\nconcurrency: lots\nlimits:\n  content: big\nagents:\n  mine:\n    command: echo hi\n"},
	}
	var golden strings.Builder
	for _, tt := range tests {
		_, err := parseSettings("/home/me/.config/knotd/config.yaml", []byte(tt.yaml))
		if err == nil {
			t.Errorf("%s: parseSettings(%q) = nil error", tt.name, tt.yaml)
			continue
		}
		for _, goName := range []string{"agentrun.", "config.Settings", "config.LimitSettings", "config.BudgetSettings", "config.BreakerSettings", "map[", "[]", "time.Duration", "!!", "unmarshal"} {
			if strings.Contains(err.Error(), goName) {
				t.Errorf("%s: the message names Go or YAML internals (%s): %v", tt.name, goName, err)
			}
		}
		fmt.Fprintf(&golden, "== %s\n%s-- \n%v\n\n", tt.name, tt.yaml, err)
	}
	testutil.Golden(t, "testdata/errors.golden", []byte(golden.String()))
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

func TestFormatSize(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"},
		{1023, "1023 bytes"},
		{1024, "1.0 KiB"},
		{64 << 10, "64.0 KiB"},
		{3 << 19, "1.5 MiB"},
		{2 << 30, "2.0 GiB"},
	} {
		if got := FormatSize(tt.n); got != tt.want {
			t.Errorf("FormatSize(%d) = %q; want %q", tt.n, got, tt.want)
		}
	}
}
