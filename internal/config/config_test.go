package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
)

// configEnv is a user config directory and a vault, both empty.
type configEnv struct {
	dir, vault string
}

func newConfigEnv(t *testing.T) configEnv {
	t.Helper()
	base := t.TempDir()
	e := configEnv{dir: filepath.Join(base, "config", "knotd"), vault: filepath.Join(base, "vault")}
	if err := os.MkdirAll(e.vault, 0o700); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e configEnv) writeUser(t *testing.T, yaml string) {
	t.Helper()
	writeFile(t, filepath.Join(e.dir, ConfigFile), yaml)
}

func (e configEnv) writeVault(t *testing.T, yaml string) {
	t.Helper()
	writeFile(t, VaultConfigPath(e.vault), yaml)
}

func (e configEnv) load(flags Settings) (*Config, error) {
	return Load(LoadOptions{Vault: e.vault, ConfigDir: e.dir, Flags: flags})
}

func (e configEnv) mustLoad(t *testing.T, flags Settings) *Config {
	t.Helper()
	c, err := e.load(flags)
	if err != nil {
		t.Fatalf("Load = %v", err)
	}
	return c
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoad_Defaults(t *testing.T) {
	c := newConfigEnv(t).mustLoad(t, Settings{})
	want := &Config{
		DefaultAgent:  DefaultAgent,
		Debounce:      defaultDebounce,
		MaxWait:       defaultMaxWait,
		Concurrency:   DefaultConcurrency,
		ObsidianDir:   defaultObsidianDir,
		MaxStrandSize: DefaultMaxStrandSize,
		Agents:        map[string]agentrun.Agent{"digest": {Name: "digest", Preset: "digest"}},
		Breakers:      DefaultBreakers,
		AnswersFrom:   AnswersAnywhere,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load() with no files =\n%+v; want\n%+v", c, want)
	}
}

func TestLoad_MergesLayers(t *testing.T) {
	e := newConfigEnv(t)
	e.writeUser(t, `
default_agent: mine
debounce: 3s
max_wait: 20s
concurrency: 4
ignore: [from-user/]
limits:
  diff: 1KiB
  tieoff_sections: 2
agents:
  mine:
    command: [mytool]
  other:
    preset: claude
`)
	e.writeVault(t, `
default_agent: other
debounce: 5s
ignore: [from-vault/]
obsidian_dir: .obs
limits:
  tieoff_sections: 9
  max_strand_size: 1MiB
`)
	c := e.mustLoad(t, Settings{Concurrency: ptr(1), Ignore: []string{"from-flag/"}})
	checks := []struct {
		field     string
		got, want any
	}{
		{"DefaultAgent (vault over user)", c.DefaultAgent, "other"},
		{"Debounce (vault over user)", c.Debounce, 5 * time.Second},
		{"MaxWait (user)", c.MaxWait, 20 * time.Second},
		{"Concurrency (flag over user)", c.Concurrency, 1},
		{"Ignore (all layers)", c.Ignore, []string{"from-user/", "from-vault/", "from-flag/"}},
		{"ObsidianDir (vault)", c.ObsidianDir, ".obs"},
		// The vault's 9 is above the user's 2: a vault config may only
		// tighten limits.
		{"Limits (per key)", c.Limits, agentrun.Limits{Diff: 1 << 10, TieOffSections: 2}},
		{"Clamped", c.Clamped, []string{"limits: tieoff_sections 9 is above yours (2)"}},
		{"MaxStrandSize (vault)", c.MaxStrandSize, int64(1 << 20)},
		{"Files", c.Files, []string{filepath.Join(e.dir, ConfigFile), VaultConfigPath(e.vault)}},
	}
	for _, ck := range checks {
		if !reflect.DeepEqual(ck.got, ck.want) {
			t.Errorf("%s = %v; want %v", ck.field, ck.got, ck.want)
		}
	}
	for _, name := range []string{"mine", "other", "digest"} {
		if a, err := c.Agent(name); err != nil || a.Name != name {
			t.Errorf("Agent(%q) = %+v, %v; want the agent named %q", name, a, err, name)
		}
	}
}

func TestLoad_Timeouts(t *testing.T) {
	e := newConfigEnv(t)
	e.writeUser(t, `
timeout: 3m
agents:
  own:
    command: [x]
    timeout: 1h
  inherit:
    command: [y]
`)
	c := e.mustLoad(t, Settings{})
	if got := c.Agents["own"].Timeout; got != time.Hour {
		t.Errorf("own agent timeout = %v; want its own 1h", got)
	}
	if got := c.Agents["inherit"].Timeout; got != 3*time.Minute {
		t.Errorf("agent without timeout = %v; want the file's 3m", got)
	}
	c = e.mustLoad(t, Settings{Timeout: ptr(time.Minute)})
	for _, name := range []string{"own", "inherit", "digest"} {
		if got := c.Agents[name].Timeout; got != time.Minute {
			t.Errorf("with --timeout 1m, %s timeout = %v; want 1m", name, got)
		}
	}
}

func TestLoad_ExplicitUserFile(t *testing.T) {
	e := newConfigEnv(t)
	other := filepath.Join(t.TempDir(), "elsewhere.yaml")
	writeFile(t, other, "concurrency: 7\n")
	c, err := Load(LoadOptions{Vault: e.vault, ConfigDir: e.dir, UserFile: other})
	if err != nil || c.Concurrency != 7 {
		t.Fatalf("Load(--config %s) = %+v, %v; want concurrency 7", other, c, err)
	}
	_, err = Load(LoadOptions{Vault: e.vault, ConfigDir: e.dir, UserFile: other + ".missing"})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(--config missing) = %v; want a not-exist error", err)
	}
}

func TestLoad_UserMayNamePresetDirectly(t *testing.T) {
	e := newConfigEnv(t)
	e.writeUser(t, "default_agent: claude\n")
	c := e.mustLoad(t, Settings{})
	if a, err := c.Agent(""); err != nil || a.Preset != "claude" {
		t.Errorf("Agent(\"\") = %+v, %v; want the claude preset", a, err)
	}
	// The --agent flag too.
	c = newConfigEnv(t).mustLoad(t, Settings{DefaultAgent: ptr("codex")})
	if a, err := c.Agent(""); err != nil || a.Preset != "codex" {
		t.Errorf("with --agent codex, Agent(\"\") = %+v, %v; want the codex preset", a, err)
	}
	// Defining a preset does not make the others resolvable by name.
	if _, err := c.Agent("gemini"); err == nil {
		t.Error(`Agent("gemini") = nil error; want an unknown agent error`)
	}
}

func TestLoad_VaultTuningNeedsNoTrust(t *testing.T) {
	e := newConfigEnv(t)
	e.writeUser(t, "agents:\n  mine:\n    command: [mytool]\n")
	e.writeVault(t, "default_agent: mine\ndebounce: 5s\nignore: [archive/]\nlimits:\n  diff: 2KiB\n")
	c := e.mustLoad(t, Settings{})
	if c.DefaultAgent != "mine" || c.Debounce != 5*time.Second || c.Limits.Diff != 2<<10 {
		t.Errorf("Load = %+v; want the vault's default_agent, debounce and limits", c)
	}
}

func TestLoad_DefaultAgentUndefined(t *testing.T) {
	tests := []struct {
		name        string
		user, vault string
		want        []string
	}{
		{"vault names an unknown agent", "", "default_agent: nope\n",
			[]string{`default_agent "nope"`, "config.yaml", "define it under agents:"}},
		{"vault names a preset the user never configured", "", "default_agent: claude\n",
			[]string{`default_agent "claude"`, "define it under agents:"}},
		{"user names an unknown agent", "default_agent: nope\n", "",
			[]string{`default_agent "nope"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newConfigEnv(t)
			if tt.user != "" {
				e.writeUser(t, tt.user)
			}
			if tt.vault != "" {
				e.writeVault(t, tt.vault)
			}
			_, err := e.load(Settings{})
			if err == nil {
				t.Fatal("Load = nil error; want one")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load = %q; want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestLoad_InvalidValues(t *testing.T) {
	tests := []struct {
		name, user string
		flags      Settings
		want       string
	}{
		{"concurrency zero", "concurrency: 0\n", Settings{}, "concurrency 0"},
		{"concurrency flag", "", Settings{Concurrency: ptr(1000)}, "config from the command line: concurrency 1000"},
		{"negative debounce", "debounce: -1s\n", Settings{}, "debounce -1s is negative"},
		{"max_wait under debounce", "debounce: 10s\nmax_wait: 5s\n", Settings{}, "max_wait 5s is shorter than debounce 10s"},
		{"poll too fast", "poll: 1ms\n", Settings{}, "poll 1ms"},
		{"zero timeout", "timeout: 0s\n", Settings{}, "timeout 0s is not positive"},
		{"obsidian_dir path", "obsidian_dir: a/b\n", Settings{}, `obsidian_dir "a/b"`},
		{"zero limit", "limits:\n  max_strand_size: 0\n", Settings{}, "max_strand_size 0"},
		{"empty ignore", "ignore: ['  ']\n", Settings{}, "empty pattern"},
		{"invalid agent", "agents:\n  t:\n    command: [t]\n    prompt: stdn\n", Settings{}, `prompt "stdn"`},
		{"agent with model flag", "agents:\n  c:\n    preset: claude\n    model: --yolo\n", Settings{}, "may not start with '-'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newConfigEnv(t)
			if tt.user != "" {
				e.writeUser(t, tt.user)
			}
			_, err := e.load(tt.flags)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load(%q) = %v; want an error mentioning %q", tt.user, err, tt.want)
			}
		})
	}
}

func TestConfig_Agent(t *testing.T) {
	e := newConfigEnv(t)
	e.writeUser(t, "default_agent: mine\nagents:\n  mine:\n    command: [mytool]\n")
	c := e.mustLoad(t, Settings{})
	tests := []struct {
		name, want string
	}{{"", "mine"}, {"mine", "mine"}, {"digest", "digest"}}
	for _, tt := range tests {
		if a, err := c.Agent(tt.name); err != nil || a.Name != tt.want {
			t.Errorf("Agent(%q) = %+v, %v; want %s", tt.name, a, err, tt.want)
		}
	}
	if _, err := c.Agent("claude"); err == nil || !strings.Contains(err.Error(), `unknown agent "claude"`) {
		t.Errorf(`Agent("claude") = %v; want an unknown agent error`, err)
	}
}

func TestUserConfigDir(t *testing.T) {
	xdg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", xdg)
	if got, err := UserConfigDir(); err != nil || got != filepath.Join(xdg, "knotd") {
		t.Errorf("UserConfigDir() = %q, %v; want %s", got, err, filepath.Join(xdg, "knotd"))
	}
}

// TestLoad_VaultConfigMayOnlyTighten: the vault config travels with the
// notes and may come from someone else: it may make knotd do less than
// the user said (lower limits, a longer debounce, no session writes),
// never more, unless the user trusted it; what it asked for and did not
// get is said (Clamped).
func TestLoad_VaultConfigMayOnlyTighten(t *testing.T) {
	tests := []struct {
		name, user, vault string
		trust             bool
		check             func(c *Config) bool
		clamped           string
	}{
		{"raise content", "", "limits: {content: 10MiB}\n", false,
			func(c *Config) bool { return c.Limits.Content == 256<<10 }, "limits: content 10485760 is above yours (262144)"},
		{"lower content", "", "limits: {content: 1KiB}\n", false,
			func(c *Config) bool { return c.Limits.Content == 1<<10 }, ""},
		{"raise the user's max_strand_size", "limits: {max_strand_size: 1MiB}\n", "limits: {max_strand_size: 1GiB}\n", false,
			func(c *Config) bool { return c.MaxStrandSize == 1<<20 }, "max_strand_size"},
		{"raise prompt", "", "limits: {prompt: 100MiB}\n", false,
			func(c *Config) bool { return c.Limits.Prompt == 512<<10 }, "prompt"},
		{"raise diff and tieoff_bytes", "", "limits: {diff: 1GiB, tieoff_bytes: 1GiB}\n", false,
			func(c *Config) bool { return c.Limits.Diff == 64<<10 && c.Limits.TieOffBytes == 32<<10 }, "tieoff_bytes"},
		{"raise concurrency", "concurrency: 3\n", "concurrency: 64\n", false,
			func(c *Config) bool { return c.Concurrency == 3 }, "concurrency 64 is above yours (3)"},
		{"raise timeout", "", "timeout: 100h\n", false,
			func(c *Config) bool { a, _ := c.Agent(""); return a.Timeout == agentrun.DefaultTimeout }, "timeout"},
		{"tighten the breakers", "", "breakers: {runs: 3, within: 1h, failures: 1}\n", false,
			func(c *Config) bool { return c.Breakers == Breakers{Runs: 3, Within: time.Hour, Failures: 1} }, ""},
		{"loosen the breakers", "", "breakers: {runs: 100, within: 1m, failures: 50}\n", false,
			func(c *Config) bool { return c.Breakers == DefaultBreakers }, "breakers: runs 100 is above yours (60)"},
		{"turn a breaker off", "", "breakers: {failures: 0}\n", false,
			func(c *Config) bool { return c.Breakers == DefaultBreakers }, "breakers: failures 0 is above yours (5)"},
		{"turn on a breaker the user turned off", "breakers: {runs: 0}\n", "breakers: {runs: 9}\n", false,
			func(c *Config) bool { return c.Breakers.Runs == 9 }, ""},
		{"lower the budget", "budget: {day_usd: 5}\n", "budget: {day_usd: 2.5, note_day_runs: 3}\n", false,
			func(c *Config) bool { return c.Budget == Budget{DayUSD: 2.5, NoteDayRuns: 3} }, ""},
		{"raise the budget", "budget: {day_usd: 5}\n", "budget: {day_usd: 50, note_day_runs: 3}\n", false,
			func(c *Config) bool { return c.Budget == Budget{DayUSD: 5, NoteDayRuns: 3} }, "budget: day_usd 50 is above yours (5)"},
		{"uncap the budget", "budget: {day_runs: 10}\n", "budget: {day_runs: 0}\n", false,
			func(c *Config) bool { return c.Budget.DayRuns == 10 }, "budget: day_runs 0 is above yours (10)"},
		{"shorten the debounce", "debounce: 2s\n", "debounce: 1ms\n", false,
			func(c *Config) bool { return c.Debounce == 2*time.Second }, "debounce 1ms is shorter than yours (2s)"},
		{"shorten the default debounce", "", "debounce: 500ms\n", false,
			func(c *Config) bool { return c.Debounce == 2*time.Second }, "debounce 500ms is shorter than yours (2s)"},
		{"lengthen the debounce", "debounce: 2s\n", "debounce: 5s\n", false,
			func(c *Config) bool { return c.Debounce == 5*time.Second && c.MaxWait == 15*time.Second }, ""},
		{"shorten max_wait", "", "max_wait: 3s\n", false,
			func(c *Config) bool { return c.MaxWait == 15*time.Second }, "max_wait 3s is shorter than yours (15s)"},
		{"lengthen max_wait", "", "max_wait: 1m\n", false,
			func(c *Config) bool { return c.MaxWait == time.Minute }, ""},
		{"poll where the user watches events", "", "poll: 100ms\n", false,
			func(c *Config) bool { return c.Poll == 0 }, "poll 100ms would poll where yours watches events"},
		{"poll more often", "poll: 10s\n", "poll: 1s\n", false,
			func(c *Config) bool { return c.Poll == 10*time.Second }, "poll 1s is shorter than yours (10s)"},
		{"poll less often", "poll: 10s\n", "poll: 1m\n", false,
			func(c *Config) bool { return c.Poll == time.Minute }, ""},
		{"write sessions the user turned off", "write_session: false\n", "write_session: true\n", false,
			func(c *Config) bool { return !c.WriteSession }, "write_session: true is not yours"},
		{"run empty notes the user leaves alone", "run_empty: false\n", "run_empty: true\n", false,
			func(c *Config) bool { return !c.RunEmpty }, "run_empty true: yours is false"},
		{"run empty notes the default leaves alone", "", "run_empty: true\n", false,
			func(c *Config) bool { return !c.RunEmpty }, "run_empty true"},
		{"stop running empty notes", "run_empty: true\n", "run_empty: false\n", false,
			func(c *Config) bool { return !c.RunEmpty }, ""},
		{"a rule that replaces tie-offs", "", "rules: [{path: journal/, mode: replace, events: [modified]}]\n", false,
			func(c *Config) bool {
				return len(c.Rules) == 1 && c.Rules[0].Mode == "" && reflect.DeepEqual(c.Rules[0].Events, []string{"modified"})
			}, `rules: path "journal/": mode replace`},
		{"a rule that turns a folder off", "", "rules: [{path: private/, mode: off}]\n", false,
			func(c *Config) bool { return len(c.Rules) == 1 && c.Rules[0].Mode == "off" }, ""},
		{"ignore more", "", "ignore: [drafts/]\nobsidian_dir: .obs\n", false,
			func(c *Config) bool {
				return reflect.DeepEqual(c.Ignore, []string{"drafts/"}) && c.ObsidianDir == ".obs"
			}, ""},
		{"a trusted vault config may raise", "", "limits: {content: 10MiB}\n", true,
			func(c *Config) bool { return c.Limits.Content == 10<<20 }, ""},
		{"a trusted vault config may do what you could", "write_session: false\ndebounce: 2s\n", "write_session: true\ndebounce: 1ms\nrun_empty: true\npoll: 100ms\nrules: [{path: j/, mode: replace}]\n", true,
			func(c *Config) bool {
				return c.WriteSession && c.Debounce == time.Millisecond && c.RunEmpty && c.Poll == 100*time.Millisecond && c.Rules[0].Mode == "replace"
			}, ""},
		// knotd writes into notes only where the user asked it to.
		{"turn write_session on", "", "write_session: true\n", false,
			func(c *Config) bool { return !c.WriteSession }, "write_session: true is not yours"},
		{"turn the user's write_session off", "write_session: true\n", "write_session: false\n", false,
			func(c *Config) bool { return !c.WriteSession }, ""},
		{"leave the user's write_session on", "write_session: true\n", "write_session: true\n", false,
			func(c *Config) bool { return c.WriteSession }, ""},
		{"a trusted vault config may turn write_session on", "", "write_session: true\n", true,
			func(c *Config) bool { return c.WriteSession }, ""},
		// Who may answer an agent: a vault config only restricts it.
		{"answers from the machine only", "", "answers_from: machine\n", false,
			func(c *Config) bool { return c.AnswersFrom == AnswersMachine }, ""},
		{"answers from anywhere where yours says machine", "answers_from: machine\n", "answers_from: anywhere\n", false,
			func(c *Config) bool { return c.AnswersFrom == AnswersMachine }, "answers_from anywhere: yours is machine"},
		{"a trusted vault config still only restricts answers_from", "answers_from: machine\n", "answers_from: anywhere\n", true,
			func(c *Config) bool { return c.AnswersFrom == AnswersMachine }, "answers_from anywhere: yours is machine"},
		{"answers from anywhere by default", "", "", false,
			func(c *Config) bool { return c.AnswersFrom == AnswersAnywhere }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newConfigEnv(t)
			if tt.user != "" {
				e.writeUser(t, tt.user)
			}
			e.writeVault(t, tt.vault)
			if tt.trust {
				if _, err := Trust(e.dir, e.vault); err != nil {
					t.Fatal(err)
				}
			}
			c := e.mustLoad(t, Settings{})
			if !tt.check(c) {
				t.Errorf("the limit did not come out as it should: %+v, max %d, concurrency %d", c.Limits, c.MaxStrandSize, c.Concurrency)
			}
			said := strings.Join(c.Clamped, "; ")
			if tt.clamped == "" && said != "" || !strings.Contains(said, tt.clamped) {
				t.Errorf("Clamped = %q; want %q", said, tt.clamped)
			}
		})
	}
}

// TestLoad_ValueErrorsNameTheLine: a value of the right kind that knotd
// refuses is reported at its line in the file.
func TestLoad_ValueErrorsNameTheLine(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"breakers:\n  runs: -1\n", "config FILE: line 2: breakers: runs -1 is negative (0 turns the breaker off)"},
		{"breakers:\n  within: 0s\n", "config FILE: line 2: breakers: within 0s is not positive"},
		{"budget:\n  day_usd: -1\n", "config FILE: line 2: budget: day_usd is negative (0 is no cap)"},
		{"debounce: 1s\nconcurrency: 1000\n", "config FILE: line 2: concurrency 1000 is not between 1 and 64"},
		{"limits:\n  content: 0\npoll: 1ms\n", "config FILE: line 3: poll 1ms is under 100ms (0 turns polling off); line 2: limits: content 0 is out of range"},
		{"ignore: [\"  \"]\n", "config FILE: line 1: ignore has an empty pattern"},
		{"answers_from: note\n", "config FILE: line 1: answers_from \"note\" is not anywhere or machine"},
	} {
		e := newConfigEnv(t)
		e.writeUser(t, tt.yaml)
		_, err := e.load(Settings{})
		want := strings.ReplaceAll(tt.want, "FILE", filepath.Join(e.dir, ConfigFile))
		if err == nil || err.Error() != want {
			t.Errorf("Load with\n%s= %v; want %s", tt.yaml, err, want)
		}
	}
	e := newConfigEnv(t)
	e.writeUser(t, "debounce: 1s\nagents:\n  mine:\n    prompt: stdin\n")
	if _, err := e.load(Settings{}); err == nil || !strings.HasPrefix(err.Error(), "config "+filepath.Join(e.dir, ConfigFile)+": line 3: ") {
		t.Errorf("an agent without a command: %v; want it at line 3", err)
	}
}

// TestLoad_MistypedPlaceholder: a generic command naming in braces a value
// close to one knotd fills in ({sesion}) is refused at its line, with the
// one meant; other text in braces, far from every name, is the program's
// own and passes, as does a preset's command.
func TestLoad_MistypedPlaceholder(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"agents:\n  mine:\n    command: [mytool, --session, \"{sesion}\"]\n",
			"config FILE: line 3: agent \"mine\": command uses {sesion}, which is not a value knotd fills in; did you mean {session}? (the values are {model}, {session}, {resume}, {prompt}, {prompt_file}, {vault}, {strand}, {event}, {run_id})"},
		{"agents:\n  mine:\n    command: [mytool, \"--note={Strand}\"]\n", "did you mean {strand}?"},
		{"agents:\n  mine:\n    command: [mytool]\n    output: json\n    reply: /r\n    session: /s\n    resume_command: [mytool, \"{resum}\"]\n",
			"config FILE: line 7: agent \"mine\": resume_command uses {resum}, which is not a value knotd fills in; did you mean {resume}?"},
		{"agents:\n  mine:\n    command: [mytool, \"{}\", \"{\\\"a\\\": 1}\", \"{customer_name}\", \"{session}\"]\n", ""},
		{"agents:\n  c:\n    preset: claude\n    command: [\"/opt/{sesion}/claude\"]\n", ""},
		{"agents:\n  g:\n    command: [goose, acp]\n    protocol: acp\n    permissions: edit\n", ""},
		{"agents:\n  g:\n    command: [goose, acp]\n    protocol: acp\n    output: json\n", "output, reply, session and resume_command do not apply to protocol: acp"},
	} {
		e := newConfigEnv(t)
		e.writeUser(t, tt.yaml)
		_, err := e.load(Settings{})
		want := strings.ReplaceAll(tt.want, "FILE", filepath.Join(e.dir, ConfigFile))
		switch {
		case want == "" && err != nil:
			t.Errorf("Load with\n%s= %v; want no error", tt.yaml, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("Load with\n%s= %v; want %s", tt.yaml, err, want)
		}
	}
}
