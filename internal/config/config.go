package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/device"
	"github.com/knotd/knotd/internal/vaultfs"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/strand"
)

// Config file names and defaults (docs/configuration.md).
const (
	// ConfigFile is the name of both config files: in the user's knotd
	// config directory, and in <vault>/.knot/.
	ConfigFile = "config.yaml"

	// DefaultAgent is the agent when no layer sets default_agent: the
	// built-in digest, which runs offline inside knotd and executes
	// nothing.
	DefaultAgent = agentrun.PresetDigest
	// defaultDebounce is the quiet period before a change counts as
	// settled.
	defaultDebounce = 2 * time.Second
	// defaultMaxWait is the longest a continuously written strand waits.
	defaultMaxWait = 15 * time.Second
	// DefaultConcurrency is how many agents run at once.
	DefaultConcurrency = 2
	// defaultObsidianDir is Obsidian's configuration folder.
	defaultObsidianDir = ".obsidian"
	// DefaultMaxStrandSize is the largest strand processed, in bytes.
	DefaultMaxStrandSize = 4 << 20

	maxConcurrency = 64
	minPoll        = 100 * time.Millisecond
)

// Config is the effective configuration of one knotd on one vault: every
// layer merged, defaults applied, everything validated.
//
// Layers, lowest first: built-in defaults, the user's config file, the
// vault's config file (<vault>/.knot/config.yaml), the command-line flags.
// Field by field:
//
//   - default_agent, debounce, max_wait, concurrency, poll, obsidian_dir
//     and each limits key: the highest layer that sets it wins.
//   - timeout: the highest file that sets it gives the default for agents
//     that set no timeout of their own; the --timeout flag overrides every
//     agent's timeout.
//   - ignore: the patterns of every layer, user's first, are all applied.
//   - agents: merged by name; a vault agent replaces the user's agent of
//     the same name as a whole (no field-by-field mixing).
//
// The vault file is synced with the notes and may come from someone else,
// so it is held to the trust rule: it may set anything above except
// agents. A vault file with a non-empty agents section loads only if the
// user trusted that exact file (Trust); otherwise Load fails with an
// error wrapping ErrUntrusted and nothing of the vault file applies. Agent names are
// resolved only against trusted definitions: the vault's default_agent
// and a strand's knot_agent may name an agent defined in the user's file
// or a trusted vault file, or the built-in digest, but not a preset the
// user never configured (a preset runs a program; choosing it is the
// user's call). The user's own file and the --agent flag may name a
// preset directly.
type Config struct {
	// DefaultAgent is the name of the agent for strands that name none.
	DefaultAgent string
	Debounce     time.Duration
	MaxWait      time.Duration
	Concurrency  int
	// Poll is the reconcile interval that replaces file-system events, or
	// zero to watch events.
	Poll        time.Duration
	Ignore      []string
	ObsidianDir string
	// MaxStrandSize is the largest strand knotd processes, in bytes.
	MaxStrandSize int64
	// Limits bounds the parts of a prompt; zero fields mean agentrun's
	// defaults.
	Limits agentrun.Limits
	// Agents holds every agent a name may resolve to, keyed and Named by
	// their name, each validated and with its timeout resolved.
	Agents map[string]agentrun.Agent
	// Runner names the answering device ("" for none); TakeoverAfter is
	// how long the answering device may be silent before another takes
	// over (0: never on its own).
	Runner        string
	TakeoverAfter time.Duration
	// WriteSession lets knotd write knot_session into notes (write_session:
	// true, see Settings.WriteSession; off by default); RunEmpty runs
	// empty strands.
	WriteSession bool
	RunEmpty     bool
	// Breakers say when knotd pauses a note (see BreakerSettings).
	Breakers Breakers
	// Budget caps a day's runs (see BudgetSettings); zero fields are no
	// cap.
	Budget Budget
	// Rules are every layer's rules, the user's first (see ScopeOf).
	Rules []Rule
	// AnswersFrom is AnswersAnywhere or AnswersMachine (see
	// Settings.AnswersFrom).
	AnswersFrom string
	// Files lists the config files that were read, lowest layer first.
	Files []string
	// Clamped says which values of an untrusted vault config would have
	// made knotd do more than the user's (or the defaults) and so did not
	// apply: a vault config may make knotd do less, never more (see clamp).
	Clamped []string
}

// LoadOptions says where Load finds the layers.
type LoadOptions struct {
	// Vault is the vault's root directory.
	Vault string
	// ConfigDir is knotd's directory in the user's config directory, where
	// the user config and the trust records live ("" means
	// UserConfigDir()).
	ConfigDir string
	// UserFile is the user config file given with --config; it must
	// exist. "" means ConfigDir/config.yaml, which may be absent.
	UserFile string
	// Flags holds the settings given on the command line.
	Flags Settings
}

// ErrUntrusted is wrapped by the error Load returns for a vault config file
// that defines agents but is not trusted in its current form.
var ErrUntrusted = errors.New("vault: vault config not trusted")

// untrustedError reports a vault config file that defines agents but is
// not trusted in its current form.
type untrustedError struct {
	Vault string // the vault root
	File  string // the vault config file
	// Agents are the names the file defines.
	Agents []string
	// Changed is true if an earlier version of the file was trusted.
	Changed bool
}

// Error says what was refused and how to trust the file.
func (e *untrustedError) Error() string {
	why := "is not trusted"
	if e.Changed {
		why = "changed since you trusted it"
	}
	return fmt.Sprintf("vault config %s defines agents (%s) but %s; "+
		"knotd runs no command a vault config defines until you trust it: review the file, then run: knotd trust %s",
		e.File, strings.Join(e.Agents, ", "), why, e.Vault)
}

// Unwrap returns ErrUntrusted.
func (e *untrustedError) Unwrap() error { return ErrUntrusted }

// UserConfigDir returns knotd's directory in the user's config directory:
// $XDG_CONFIG_HOME/knotd when XDG_CONFIG_HOME is set (on every platform),
// otherwise os.UserConfigDir()/knotd.
func UserConfigDir() (string, error) {
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "knotd"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("vault: find the user config directory: %w", err)
	}
	return filepath.Join(d, "knotd"), nil
}

// VaultConfigPath returns the path of the vault config file of root.
func VaultConfigPath(root string) string {
	return filepath.Join(root, strand.StateDir, ConfigFile)
}

// layer is one parsed Settings and where it came from.
type layer struct {
	Settings
	name    string         // the file, or "from the command line" (messages read "config NAME: …")
	data    []byte         // the file's bytes (nil if absent)
	lines   map[string]int // the line of each key by its path (limits.content), for messages
	rules   []Rule         // its rules, compiled by validate
	trusted bool           // the user's own layer, or a trusted vault file
}

// Load reads, checks and merges the configuration layers described by
// opts. See Config for the merge and trust rules.
func Load(opts LoadOptions) (*Config, error) {
	dir := opts.ConfigDir
	if dir == "" {
		var err error
		if dir, err = UserConfigDir(); err != nil {
			return nil, err
		}
	}
	userPath := opts.UserFile
	if userPath == "" {
		userPath = filepath.Join(dir, ConfigFile)
	}
	c := &Config{}
	user, err := c.readLayer(userPath, opts.UserFile != "")
	if err != nil {
		return nil, err
	}
	user.trusted = true
	vault, err := c.readVaultLayer(opts.Vault)
	if err != nil {
		return nil, err
	}
	if vault.data != nil {
		if err := checkTrust(dir, opts.Vault, &vault); err != nil {
			return nil, err
		}
	}
	flags := layer{Settings: opts.Flags, name: "from the command line", trusted: true}
	if err := c.merge(user, vault, flags); err != nil {
		return nil, err
	}
	return c, nil
}

// MaxConfigSize bounds a config file: a larger one is refused, not read.
const MaxConfigSize = 1 << 20

// readLayer reads and parses the user's config file; a missing file is an
// empty layer unless required. At most MaxConfigSize bytes are read.
func (c *Config) readLayer(path string, required bool) (layer, error) {
	data, err := readBounded(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !required:
		return layer{name: path}, nil
	case err != nil:
		return layer{}, fmt.Errorf("config: %w", err)
	}
	return c.parseLayer(path, data)
}

// readBounded reads the file at path, refusing one over MaxConfigSize.
func readBounded(path string) (data []byte, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // read only
	data, err = io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err == nil && len(data) > MaxConfigSize {
		err = fmt.Errorf("%s is larger than %d bytes: knotd reads no config that big", path, MaxConfigSize)
	}
	return data, err
}

// readVaultLayer reads and parses the vault's config file. The file
// travels with the vault, so it is someone else's input: it is read inside
// the vault root, never through a symbolic link, never from a FIFO or a
// device, and never beyond MaxConfigSize.
func (c *Config) readVaultLayer(root string) (layer, error) {
	path := VaultConfigPath(root)
	vr, err := os.OpenRoot(root)
	if err != nil {
		return layer{}, fmt.Errorf("config: %w", err)
	}
	defer vr.Close()
	data, _, err := vaultfs.ReadFile(vr, strand.StateDir+"/"+ConfigFile, MaxConfigSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return layer{name: path}, nil
	case errors.Is(err, vaultfs.ErrNotRegular):
		return layer{}, fmt.Errorf("config %s: %w: knotd reads only a regular file there; replace it with the file itself, or remove it", path, err)
	case errors.Is(err, vaultfs.ErrTooLarge):
		return layer{}, fmt.Errorf("config %s is larger than %d bytes: knotd reads no config that big", path, MaxConfigSize)
	case err != nil:
		return layer{}, fmt.Errorf("config: %w", err)
	}
	return c.parseLayer(path, data)
}

// parseLayer parses one config file's bytes into a layer.
func (c *Config) parseLayer(path string, data []byte) (layer, error) {
	s, lines, err := parseSettingsLines(path, data)
	if err != nil {
		return layer{}, err
	}
	c.Files = append(c.Files, path)
	if data == nil {
		data = []byte{}
	}
	return layer{Settings: s, name: path, data: data, lines: lines}, nil
}

// checkTrust sets vault.trusted if the user trusted the vault layer's
// exact bytes, and returns an *untrustedError if the layer defines agents
// and is not trusted.
func checkTrust(dir, root string, vault *layer) error {
	rec, ok, err := trustRecord(dir, root)
	if err != nil {
		return err
	}
	vault.trusted = ok && rec.SHA256 == sha256Hex(vault.data)
	if vault.trusted || len(vault.Agents) == 0 {
		return nil
	}
	return &untrustedError{Vault: root, File: vault.name, Agents: slices.Sorted(maps.Keys(vault.Agents)), Changed: ok}
}

// Breakers say when knotd pauses a note: after more than Runs runs
// within Within, or after Failures failed runs in a row (0: never).
type Breakers struct {
	Runs     int
	Within   time.Duration
	Failures int
}

// Budget caps the runs of a day (UTC), for the vault and for each note,
// and one run's cost; a zero field is no cap.
type Budget struct {
	DayUSD        float64
	DayRuns       int
	DayTokens     int64
	NoteDayUSD    float64
	NoteDayRuns   int
	NoteDayTokens int64
	RunUSD        float64
}

// DefaultBreakers are the breakers when no layer sets them: a note that
// runs more than 60 times in 10 minutes (a run every 10 s, sustained) is
// in a loop rather than being written: someone writing, pausing two
// seconds now and then (the debounce), makes a run every 10 to 30 s;
// five failures in a row will not pass by themselves.
var DefaultBreakers = Breakers{Runs: 60, Within: 10 * time.Minute, Failures: 5}

// merge applies the layers over the defaults and validates the result.
func (c *Config) merge(user, vault, flags layer) error {
	c.DefaultAgent, c.Debounce, c.MaxWait = DefaultAgent, defaultDebounce, defaultMaxWait
	c.Concurrency, c.ObsidianDir, c.MaxStrandSize = DefaultConcurrency, defaultObsidianDir, DefaultMaxStrandSize
	c.Breakers = DefaultBreakers
	c.AnswersFrom = AnswersAnywhere
	c.Agents = map[string]agentrun.Agent{}
	var timeout time.Duration
	agentBy := layer{name: "the defaults", trusted: true}
	source := map[string]layer{} // agent name -> the layer that defined it
	for _, l := range []layer{user, vault, flags} {
		if err := l.validate(); err != nil {
			return err
		}
		s := &l.Settings
		if l.name == vault.name && l.data != nil && !l.trusted {
			c.Clamped = append(c.clamp(s, timeout), clampRules(l.rules)...)
		}
		if s.DefaultAgent != nil {
			c.DefaultAgent, agentBy = *s.DefaultAgent, l
		}
		setIf(&c.Debounce, s.Debounce)
		setIf(&c.MaxWait, s.MaxWait)
		setIf(&c.Concurrency, s.Concurrency)
		setIf(&c.Poll, s.Poll)
		setIf(&c.ObsidianDir, s.ObsidianDir)
		setIf(&c.Runner, s.Runner)
		setIf(&c.TakeoverAfter, s.TakeoverAfter)
		setIf(&c.WriteSession, s.WriteSession)
		setIf(&c.RunEmpty, s.RunEmpty)
		if v := s.AnswersFrom; l.name == vault.name && v != nil && *v == AnswersAnywhere && c.AnswersFrom == AnswersMachine {
			// Even a vault config you trust only restricts it: who may
			// answer an agent is the machine's owner's to open up.
			c.Clamped = append(c.Clamped, "answers_from anywhere: yours is machine (answers only from knotd approve|deny and the console)")
		} else {
			setIf(&c.AnswersFrom, v)
		}
		setIf(&c.Breakers.Runs, s.Breakers.Runs)
		setIf(&c.Breakers.Within, s.Breakers.Within)
		setIf(&c.Breakers.Failures, s.Breakers.Failures)
		b := &s.Budget
		setIf(&c.Budget.DayUSD, b.DayUSD)
		setIf(&c.Budget.DayRuns, b.DayRuns)
		setIf(&c.Budget.DayTokens, b.DayTokens)
		setIf(&c.Budget.NoteDayUSD, b.NoteDayUSD)
		setIf(&c.Budget.NoteDayRuns, b.NoteDayRuns)
		setIf(&c.Budget.NoteDayTokens, b.NoteDayTokens)
		setIf(&c.Budget.RunUSD, b.RunUSD)
		if l.name != flags.name {
			setIf(&timeout, s.Timeout)
		}
		c.Ignore = append(c.Ignore, s.Ignore...)
		c.Rules = append(c.Rules, l.rules...)
		c.mergeLimits(&s.Limits)
		for name, a := range s.Agents {
			a.Name = name
			c.Agents[name] = a
			source[name] = l
		}
	}
	if c.MaxWait < c.Debounce {
		if user.MaxWait != nil || vault.MaxWait != nil || flags.MaxWait != nil {
			return fmt.Errorf("config: max_wait %v is shorter than debounce %v", c.MaxWait, c.Debounce)
		}
		c.MaxWait = c.Debounce // only the debounce was raised: the default max_wait follows it
	}
	// A trusted layer may name a preset without defining it; an untrusted
	// vault file may not (see Config).
	if _, ok := c.Agents[c.DefaultAgent]; !ok && agentBy.trusted && slices.Contains(agentrun.Presets(), c.DefaultAgent) {
		c.Agents[c.DefaultAgent] = agentrun.Agent{Name: c.DefaultAgent, Preset: c.DefaultAgent}
		source[c.DefaultAgent] = agentBy
	}
	if _, ok := c.Agents[agentrun.PresetDigest]; !ok {
		c.Agents[agentrun.PresetDigest] = agentrun.Agent{Name: agentrun.PresetDigest, Preset: agentrun.PresetDigest}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		a := c.Agents[name]
		if flags.Timeout != nil {
			a.Timeout = *flags.Timeout
		} else if a.Timeout == 0 {
			a.Timeout = timeout
		}
		if err := a.Validate(); err != nil {
			l := source[name]
			return fmt.Errorf("config %s: %s%w", l.name, l.at("agents."+name), err)
		}
		if field, err := checkPlaceholders(a); err != nil {
			l := source[name]
			return fmt.Errorf("config %s: %s%w", l.name, l.at("agents."+name+"."+field), err)
		}
		c.Agents[name] = a
	}
	if _, ok := c.Agents[c.DefaultAgent]; !ok {
		hint := ""
		if slices.Contains(agentrun.Presets(), c.DefaultAgent) {
			hint = fmt.Sprintf(" (for the %[1]s preset: agents: {%[1]s: {preset: %[1]s}})", c.DefaultAgent)
		}
		return fmt.Errorf("config %s: default_agent %q is not a defined agent (defined: %s); define it under agents: in %s%s",
			agentBy.name, c.DefaultAgent, strings.Join(slices.Sorted(maps.Keys(c.Agents)), ", "), user.name, hint)
	}
	for _, r := range c.Rules {
		for _, a := range append([]string{r.Agent}, r.Agents...) {
			if _, ok := c.Agents[a]; a != "" && !ok {
				return fmt.Errorf("config %s: rules: path %q names the agent %q, which is not defined (defined: %s)",
					r.From, r.Scope, a, strings.Join(slices.Sorted(maps.Keys(c.Agents)), ", "))
			}
		}
	}
	return nil
}

// clamp holds an untrusted vault layer s to what the settings already in
// effect (the user's, or the defaults) allow, and says which values it
// refused: a vault config may make knotd do less than the user said,
// never more. Each setting has its direction (docs/configuration.md#configuration):
//
//	less only: limits (lower), concurrency (lower), timeout (shorter),
//	  breakers (trip sooner), budget (lower), debounce and max_wait
//	  (longer: fewer runs), poll (longer, and not on where yours is off),
//	  write_session (only false), run_empty (only false), rules' mode (not
//	  replace, which drops a tie-off's older sections; see clampRules)
//	any value: ignore and obsidian_dir (they only ignore more), rules'
//	  paths, events and agents (they only narrow), default_agent and
//	  rules' agent (among the user's agents only: see Config), runner and
//	  takeover_after (which of the vault's devices answers it)
//
// timeout is the user's default agent timeout (0: agentrun.DefaultTimeout).
func (c *Config) clamp(s *Settings, timeout time.Duration) []string {
	var said []string
	if v, mine := s.Debounce, c.Debounce; v != nil && *v < mine {
		said = append(said, fmt.Sprintf("debounce %v is shorter than yours (%v)", *v, mine))
		s.Debounce = &mine
	}
	if v, mine := s.MaxWait, c.MaxWait; v != nil && *v < mine {
		said = append(said, fmt.Sprintf("max_wait %v is shorter than yours (%v)", *v, mine))
		s.MaxWait = &mine
	}
	if v, mine := s.Poll, c.Poll; v != nil && *v != 0 && (mine == 0 || *v < mine) {
		if mine == 0 {
			said = append(said, fmt.Sprintf("poll %v would poll where yours watches events (poll 0)", *v))
		} else {
			said = append(said, fmt.Sprintf("poll %v is shorter than yours (%v)", *v, mine))
		}
		s.Poll = &mine
	}
	if v := s.RunEmpty; v != nil && *v && !c.RunEmpty {
		said = append(said, "run_empty true: yours is false (empty notes wait for content)")
		s.RunEmpty = nil
	}
	def := agentrun.DefaultLimits()
	or := func(v, d int) int64 {
		if v > 0 {
			return int64(v)
		}
		return int64(d)
	}
	size := func(key string, v **Size, limit int64) {
		if *v != nil && int64(**v) > limit {
			said = append(said, fmt.Sprintf("limits: %s %d is above yours (%d)", key, int64(**v), limit))
			lim := Size(limit)
			*v = &lim
		}
	}
	size("max_strand_size", &s.Limits.MaxStrandSize, c.MaxStrandSize)
	size("content", &s.Limits.Content, or(c.Limits.Content, def.Content))
	size("diff", &s.Limits.Diff, or(c.Limits.Diff, def.Diff))
	size("tieoff_bytes", &s.Limits.TieOffBytes, or(c.Limits.TieOffBytes, def.TieOffBytes))
	size("prompt", &s.Limits.Prompt, or(c.Limits.Prompt, def.Prompt))
	if v, limit := s.Limits.TieOffSections, int(or(c.Limits.TieOffSections, def.TieOffSections)); v != nil && *v > limit {
		said = append(said, fmt.Sprintf("limits: tieoff_sections %d is above yours (%d)", *v, limit))
		s.Limits.TieOffSections = &limit
	}
	// A breaker trips sooner, never later: fewer runs, a longer window,
	// fewer failures; off (0) only when yours is off too.
	capAt(&said, "breakers: runs", &s.Breakers.Runs, c.Breakers.Runs)
	capAt(&said, "breakers: failures", &s.Breakers.Failures, c.Breakers.Failures)
	if v, mine := s.Breakers.Within, c.Breakers.Within; v != nil && *v < mine {
		said = append(said, fmt.Sprintf("breakers: within %v is shorter than yours (%v)", *v, mine))
		s.Breakers.Within = &mine
	}
	// A budget may be lower, never higher, nor uncapped (0) where yours
	// has a cap.
	b, mine := &s.Budget, c.Budget
	capAt(&said, "budget: day_usd", &b.DayUSD, mine.DayUSD)
	capAt(&said, "budget: day_runs", &b.DayRuns, mine.DayRuns)
	capAt(&said, "budget: day_tokens", &b.DayTokens, mine.DayTokens)
	capAt(&said, "budget: note_day_usd", &b.NoteDayUSD, mine.NoteDayUSD)
	capAt(&said, "budget: note_day_runs", &b.NoteDayRuns, mine.NoteDayRuns)
	capAt(&said, "budget: note_day_tokens", &b.NoteDayTokens, mine.NoteDayTokens)
	capAt(&said, "budget: run_usd", &b.RunUSD, mine.RunUSD)
	if v, limit := s.Concurrency, c.Concurrency; v != nil && *v > limit {
		said = append(said, fmt.Sprintf("concurrency %d is above yours (%d)", *v, limit))
		s.Concurrency = &limit
	}
	// knotd writes into notes only where you asked it to.
	if v := s.WriteSession; v != nil && *v && !c.WriteSession {
		said = append(said, "write_session: true is not yours (knotd writes into notes only if your config asks it to)")
		s.WriteSession = nil
	}
	if timeout <= 0 {
		timeout = agentrun.DefaultTimeout
	}
	if v := s.Timeout; v != nil && *v > timeout {
		said = append(said, fmt.Sprintf("timeout %v is above yours (%v)", *v, timeout))
		s.Timeout = &timeout
	}
	return said
}

// clampRules drops mode replace from the rules of an untrusted vault
// layer (the note's own knot_mode, or the user's rules, still apply): a
// replace makes knotd drop a tie-off's older sections, more than append.
// It says which it dropped.
func clampRules(rules []Rule) []string {
	var said []string
	for i := range rules {
		if rules[i].Mode == "replace" {
			said = append(said, fmt.Sprintf("rules: path %q: mode replace (it would drop the tie-offs' older sections)", rules[i].Scope))
			rules[i].Mode = ""
		}
	}
	return said
}

// capAt lowers the value *v of an untrusted layer (a budget, a breaker's
// count) to mine when it is higher, or none (0) where mine is set, and
// says so in said.
func capAt[T int | int64 | float64](said *[]string, key string, v **T, mine T) {
	if *v != nil && mine > 0 && (**v == 0 || **v > mine) {
		*said = append(*said, fmt.Sprintf("%s %v is above yours (%v)", key, **v, mine))
		*v = &mine
	}
}

func (c *Config) mergeLimits(l *LimitSettings) {
	set := func(dst *int, v *Size) {
		if v != nil {
			*dst = int(*v)
		}
	}
	if l.MaxStrandSize != nil {
		c.MaxStrandSize = int64(*l.MaxStrandSize)
	}
	set(&c.Limits.Content, l.Content)
	set(&c.Limits.Diff, l.Diff)
	setIf(&c.Limits.TieOffSections, l.TieOffSections)
	set(&c.Limits.TieOffBytes, l.TieOffBytes)
	set(&c.Limits.Prompt, l.Prompt)
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// validate checks the values one layer sets, reporting every problem at
// once under the layer's name.
func (l *layer) validate() error {
	var probs []string
	// add says what is wrong with the value of key (limits.content), at
	// its line when it comes from a file.
	add := func(key, format string, args ...any) { probs = append(probs, l.at(key)+fmt.Sprintf(format, args...)) }
	s := &l.Settings
	if s.DefaultAgent != nil && checkAgentName(*s.DefaultAgent) != nil {
		add("default_agent", "default_agent %q is not an agent name", *s.DefaultAgent)
	}
	for _, d := range []struct {
		key string
		v   *time.Duration
	}{{"debounce", s.Debounce}, {"max_wait", s.MaxWait}} {
		if d.v != nil && *d.v < 0 {
			add(d.key, "%s %v is negative", d.key, *d.v)
		}
	}
	if s.TakeoverAfter != nil && *s.TakeoverAfter != 0 && *s.TakeoverAfter < device.MinTakeoverAfter {
		add("takeover_after", "takeover_after %v is under %v (a few heartbeats, so that a sync delay never passes for silence; 0 turns it off)", *s.TakeoverAfter, device.MinTakeoverAfter)
	}
	if s.Runner != nil && (strings.TrimSpace(*s.Runner) != *s.Runner || *s.Runner == "" || strings.ContainsAny(*s.Runner, "\x00\n")) {
		add("runner", "runner %q is not a device name or id", *s.Runner)
	}
	if v := s.AnswersFrom; v != nil && *v != AnswersAnywhere && *v != AnswersMachine {
		add("answers_from", "answers_from %q is not anywhere or machine", *v)
	}
	if b := s.Breakers; b.Runs != nil && *b.Runs < 0 {
		add("breakers.runs", "breakers: runs %d is negative (0 turns the breaker off)", *b.Runs)
	}
	if b := s.Breakers; b.Failures != nil && *b.Failures < 0 {
		add("breakers.failures", "breakers: failures %d is negative (0 turns the breaker off)", *b.Failures)
	}
	if b := s.Breakers; b.Within != nil && *b.Within <= 0 {
		add("breakers.within", "breakers: within %v is not positive", *b.Within)
	}
	bu := s.Budget
	for _, v := range []struct {
		key string
		neg bool
	}{
		{"day_usd", bu.DayUSD != nil && *bu.DayUSD < 0}, {"day_runs", bu.DayRuns != nil && *bu.DayRuns < 0},
		{"day_tokens", bu.DayTokens != nil && *bu.DayTokens < 0}, {"note_day_usd", bu.NoteDayUSD != nil && *bu.NoteDayUSD < 0},
		{"note_day_runs", bu.NoteDayRuns != nil && *bu.NoteDayRuns < 0}, {"note_day_tokens", bu.NoteDayTokens != nil && *bu.NoteDayTokens < 0},
		{"run_usd", bu.RunUSD != nil && *bu.RunUSD < 0},
	} {
		if v.neg {
			add("budget."+v.key, "budget: %s is negative (0 is no cap)", v.key)
		}
	}
	if s.Timeout != nil && *s.Timeout <= 0 {
		add("timeout", "timeout %v is not positive", *s.Timeout)
	}
	if s.Concurrency != nil && (*s.Concurrency < 1 || *s.Concurrency > maxConcurrency) {
		add("concurrency", "concurrency %d is not between 1 and %d", *s.Concurrency, maxConcurrency)
	}
	if s.Poll != nil && *s.Poll != 0 && *s.Poll < minPoll {
		add("poll", "poll %v is under %v (0 turns polling off)", *s.Poll, minPoll)
	}
	if d := s.ObsidianDir; d != nil && (*d == "" || *d == "." || *d == ".." || strings.ContainsAny(*d, "/\\\x00")) {
		add("obsidian_dir", "obsidian_dir %q is not a folder name", *d)
	}
	lim := &s.Limits
	for _, v := range []struct {
		key string
		v   *Size
	}{{"max_strand_size", lim.MaxStrandSize}, {"content", lim.Content}, {"diff", lim.Diff}, {"tieoff_bytes", lim.TieOffBytes}, {"prompt", lim.Prompt}} {
		if v.v != nil && (*v.v <= 0 || int64(*v.v) > int64(maxInt)) {
			add("limits."+v.key, "limits: %s %d is out of range", v.key, *v.v)
		}
	}
	if lim.TieOffSections != nil && *lim.TieOffSections < 0 {
		add("limits.tieoff_sections", "limits: tieoff_sections %d is negative", *lim.TieOffSections)
	}
	for _, p := range s.Ignore {
		if strings.TrimSpace(p) == "" {
			add("ignore", "ignore has an empty pattern")
		}
	}
	l.rules = compileRules(s.Rules, l.name, add)
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("config %s: %s", l.name, strings.Join(probs, "; "))
}

// at is "line N: " for the key at path in the layer's file, "" when the
// layer is not a file or the key is not in it.
func (l *layer) at(path string) string {
	if n, ok := l.lines[path]; ok {
		return fmt.Sprintf("line %d: ", n)
	}
	return ""
}

const maxInt = int(^uint(0) >> 1)

// Agent returns the agent a name resolves to: one defined in trusted
// config, or the built-in digest. It is how a strand's knot_agent is
// resolved; "" means DefaultAgent.
func (c *Config) Agent(name string) (agentrun.Agent, error) {
	if name == "" {
		name = c.DefaultAgent
	}
	if a, ok := c.Agents[name]; ok {
		return a, nil
	}
	return agentrun.Agent{}, fmt.Errorf("vault: unknown agent %q (defined: %s); define it under agents: in your config",
		name, strings.Join(slices.Sorted(maps.Keys(c.Agents)), ", "))
}

// checkPlaceholders refuses a generic command (or resume_command) that
// names in braces a value close to one knotd fills in but not one
// ({sesion}): knotd would pass it as it is. Other text in braces, far from
// every name, is the program's own and left alone.
func checkPlaceholders(a agentrun.Agent) (field string, err error) {
	if a.Preset != "" {
		return "", nil
	}
	names := agentrun.TemplateNames()
	for _, f := range []struct {
		field string
		argv  []string
	}{{"command", a.Command}, {"resume_command", a.ResumeCommand}} {
		for _, p := range agentrun.OtherPlaceholders(f.argv) {
			if near := nearest(strings.ToLower(p), names); near != "" {
				return f.field, fmt.Errorf("agent %q: %s uses {%s}, which is not a value knotd fills in; did you mean {%s}? (the values are {%s})",
					a.Name, f.field, p, near, strings.Join(names, "}, {"))
			}
		}
	}
	return "", nil
}
