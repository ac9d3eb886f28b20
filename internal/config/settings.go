package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"gopkg.in/yaml.v3"
)

// Settings is one layer of configuration: one config file as written, or
// the command-line flags. A nil field is "not set in this layer" and leaves
// the value of the layers below it; Load merges the layers into a Config.
//
// The YAML keys are the field tags. Durations are Go durations ("2s",
// "10m"); sizes are bytes, or a number with KiB, MiB or GiB ("64KiB").
// Unknown keys are errors, so a typo never passes silently.
type Settings struct {
	// DefaultAgent names the agent that runs for a strand that names none
	// in its knot_agent (the --agent flag).
	DefaultAgent *string `yaml:"default_agent"`
	// Debounce is the quiet period after a strand's last change before it
	// counts as settled (--debounce).
	Debounce *time.Duration `yaml:"debounce"`
	// MaxWait is the longest a continuously written strand waits to settle.
	MaxWait *time.Duration `yaml:"max_wait"`
	// Concurrency is how many agents may run at once (--concurrency).
	Concurrency *int `yaml:"concurrency"`
	// Timeout is a run's wall-clock limit. In a file it is the default for
	// agents that set none; as a flag (--timeout) it applies to every
	// agent.
	Timeout *time.Duration `yaml:"timeout"`
	// Poll, if positive, replaces file-system events with a reconcile
	// every Poll (--poll).
	Poll *time.Duration `yaml:"poll"`
	// Ignore lists extra gitignore-style patterns of paths to leave alone.
	Ignore []string `yaml:"ignore"`
	// ObsidianDir is the name of Obsidian's configuration folder, ignored
	// like .obsidian when a vault renamed it.
	ObsidianDir *string `yaml:"obsidian_dir"`
	// Limits bounds strand sizes and the parts of a prompt.
	Limits LimitSettings `yaml:"limits"`
	// Agents defines agents by name (docs/agents.md); the value is
	// agentrun.Agent, whose fields are the keys of an agent definition.
	Agents map[string]agentrun.Agent `yaml:"agents"`
	// Runner names the answering device of a vault synced to several
	// devices: a device's name (its host name when knotd first ran there)
	// or its id. Unset, the first device to answer keeps answering.
	Runner *string `yaml:"runner"`
	// TakeoverAfter lets another device take over answering once the
	// answering device has been silent this long (0: only when the user
	// says so).
	TakeoverAfter *time.Duration `yaml:"takeover_after"`
	// WriteSession true lets knotd write knot_session into a strand, once,
	// before its first run with an agent that keeps a conversation. False
	// (the default) keeps knotd out of notes entirely: a strand's session
	// lives in its tie-off's markers and knotd's state. The write cannot
	// be made safe against a program that saves by reading the note and
	// renaming a new file over it (docs/formats.md#what-knotd-writes-into-a-note), so it is the user's to ask for: an untrusted vault config
	// cannot turn it on.
	WriteSession *bool `yaml:"write_session"`
	// RunEmpty true runs a strand that is empty or holds only white space
	// (and knotd's own keys); by default such a strand waits for content,
	// and knotd writes nothing into it.
	RunEmpty *bool `yaml:"run_empty"`
	// Breakers pause a note that runs too often, or fails too often.
	Breakers BreakerSettings `yaml:"breakers"`
	// Budget caps what runs spend per day (UTC).
	Budget BudgetSettings `yaml:"budget"`
	// Rules choose, by the note's path, the agent, the events and the
	// mode, or keep a folder away from every agent (mode: off).
	Rules []RuleSettings `yaml:"rules"`
	// AnswersFrom says where knotd takes answers to agents' questions
	// (permissions: ask) from: AnswersAnywhere (the default: a note's
	// knot_answer, knotd approve|deny, the console) or AnswersMachine (only
	// knotd approve|deny and the console). A vault config may only
	// restrict it.
	AnswersFrom *string `yaml:"answers_from"`
	// Notify says where knotd tells the user that a question waits, a
	// run failed or a note was paused (package notify). A vault config
	// may only turn it off.
	Notify NotifySettings `yaml:"notify"`
}

// NotifySettings is the notify section of a Settings layer: where knotd
// sends its notifications. Desktop shows them on this machine's desktop;
// Command runs a program (argv, never a shell) with the event as JSON on
// its stdin; URL receives an HTTP POST in ntfy's style, with the token in
// the environment variable TokenEnv (never in a file that syncs) as a
// bearer token. A nil Command is unset; an empty one is none.
type NotifySettings struct {
	Desktop  *bool    `yaml:"desktop"`
	Command  []string `yaml:"command"`
	URL      *string  `yaml:"url"`
	TokenEnv *string  `yaml:"token_env"`
}

// The values of answers_from.
const (
	AnswersAnywhere = "anywhere"
	AnswersMachine  = "machine"
)

// RuleSettings is one rule: the notes whose path matches Path (a pattern
// as in an ignore file: "journal/", "private/**", "*.draft.md") get its
// settings. Agent is their agent when the note names none; Agents, when
// set, are the only agents a note's knot_agent may choose; Events the
// only events that run them; Mode their mode when the note sets none
// ("off": never sent to any agent, whatever the note says).
type RuleSettings struct {
	Path   string   `yaml:"path"`
	Agent  string   `yaml:"agent"`
	Agents []string `yaml:"agents"`
	Events []string `yaml:"events"`
	Mode   string   `yaml:"mode"`
	// Schedule runs the notes under Path on a schedule (event Scheduled;
	// syntax in package schedule), unless a note sets its own
	// knot_schedule.
	Schedule string `yaml:"schedule"`
}

// BudgetSettings is the budget section of a Settings layer: caps on the
// runs of a day (UTC), for the whole vault (Day...) and for each note
// (NoteDay...), in dollars as the CLIs report them, in runs, and in
// tokens (input and output); and a cap on one run, passed to the CLIs
// that take one (claude --max-budget-usd). A change that arrives over a
// cap waits, unrecorded, until the next day or a run by hand. Zero is no
// cap.
type BudgetSettings struct {
	DayUSD        *float64 `yaml:"day_usd"`
	DayRuns       *int     `yaml:"day_runs"`
	DayTokens     *int64   `yaml:"day_tokens"`
	NoteDayUSD    *float64 `yaml:"note_day_usd"`
	NoteDayRuns   *int     `yaml:"note_day_runs"`
	NoteDayTokens *int64   `yaml:"note_day_tokens"`
	RunUSD        *float64 `yaml:"run_usd"`
}

// BreakerSettings is the breakers section of a Settings layer: knotd
// pauses a note (its changes wait, none lost, until knotd resume) that
// runs more than Runs times within Within (a loop: an agent that edits
// the note it answers, a sync tool fighting an editor), or whose last
// Failures runs failed. Zero turns a breaker off.
type BreakerSettings struct {
	Runs     *int           `yaml:"runs"`
	Within   *time.Duration `yaml:"within"`
	Failures *int           `yaml:"failures"`
}

// LimitSettings is the limits section of a Settings layer.
type LimitSettings struct {
	// MaxStrandSize is the largest strand knotd processes; a larger one
	// gets a failure section saying so instead of a run.
	MaxStrandSize *Size `yaml:"max_strand_size"`
	// Content is how much of the strand a prompt shows.
	Content *Size `yaml:"content"`
	// Diff bounds the Changes diff of a prompt.
	Diff *Size `yaml:"diff"`
	// TieOffSections is how many of the newest tie-off sections a prompt
	// shows, and TieOffBytes bounds them together.
	TieOffSections *int  `yaml:"tieoff_sections"`
	TieOffBytes    *Size `yaml:"tieoff_bytes"`
	// Prompt is the hard cap on a whole prompt.
	Prompt *Size `yaml:"prompt"`
}

// Size is a number of bytes. In YAML it is an integer, or a number with
// the suffix KiB, MiB or GiB ("512KiB").
type Size int64

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseSize(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		// A TypeError, so that yaml.v3 reports it with the file's other
		// mistakes.
		found := strconv.Quote(n.Value)
		if n.Kind != yaml.ScalarNode {
			found = "a list or a map"
		}
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: expected a size, bytes or a number with KiB, MiB or GiB (64KiB), found %s", n.Line, found)}}
	}
	*s = v
	return nil
}

// FormatSize writes n bytes for people, in the units sizes are written
// in ("2.0 MiB", "512 bytes").
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// parseSize parses a size written as for YAML ("4096", "64KiB", "1MiB").
func parseSize(str string) (Size, error) {
	num, mult := str, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if strings.HasSuffix(str, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(str, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("vault: invalid size %q", str)
	}
	return Size(v * mult), nil
}

// parseSettings parses one config file. name (the file's path) is only
// used in errors, which carry the YAML line where there is one. An empty
// file, or one with only comments, is an empty Settings.
func parseSettings(name string, data []byte) (Settings, error) {
	s, _, err := parseSettingsLines(name, data)
	return s, err
}

// parseSettingsLines is parseSettings, and also returns the line of each
// key of the file by its path (debounce, limits.content, agents.mine), so
// that a later check can say where a value it refuses is.
func parseSettingsLines(name string, data []byte) (Settings, map[string]int, error) {
	var s Settings
	// The node tree first: a syntax error is found there, and a type
	// error's key is looked up in it.
	var root yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return Settings{}, nil, nil
		}
		return Settings{}, nil, syntaxError(name, data, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return Settings{}, nil, nil
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return Settings{}, nil, fmt.Errorf("config %s: %s", name, typeErrors(&root, te))
		}
		return Settings{}, nil, syntaxError(name, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Settings{}, nil, fmt.Errorf("config %s: more than one YAML document (remove the second ---)", name)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Agents)) {
		if err := checkAgentName(k); err != nil {
			return Settings{}, nil, fmt.Errorf("config %s: agents: %w", name, err)
		}
		if a := s.Agents[k]; a.Name != "" && a.Name != k {
			return Settings{}, nil, fmt.Errorf("config %s: agents: %s has name %q; the key is the name (remove name:)", name, k, a.Name)
		}
	}
	return s, keyLines(&root), nil
}

// checkAgentName checks a name under agents:, which strands name in
// knot_agent: a letter or digit, then letters, digits, ".", "_" or "-".
func checkAgentName(name string) error {
	ok := name != "" && len(name) <= 64
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case i > 0 && (r == '.' || r == '_' || r == '-'):
		default:
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("%q is not a valid agent name (letters, digits, '.', '_' and '-', starting with a letter or digit)", name)
	}
	return nil
}
