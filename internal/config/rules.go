package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/schedule"
)

// Rule is one rules: entry, compiled, with the layer it came from.
type Rule struct {
	Scope  ignore.Scope
	Agent  string
	Agents []string
	Events []string
	Mode   string
	// Schedule is the rule's schedule's text ("" when it sets none),
	// checked by schedule.Parse when the configuration was loaded.
	Schedule string
	// From names the config file (or "the Obsidian settings") that
	// holds the rule, for messages.
	From string
}

// Scope is what the rules say of one note: the union of every rule
// whose path matches it, in order. Off wins; Events and Agents are what
// every matching rule allows (their intersection); Agent and Mode are the
// last matching rule's that sets them.
type Scope struct {
	Off    bool
	Agent  string
	Agents []string // nil: any agent
	Events []string // nil: any event
	Mode   string
	// Schedule is the last matching rule's schedule ("" for none); a
	// note's own knot_schedule overrides it.
	Schedule string
	// Why names the rule that turned the note off, for its skip reason.
	Why string
}

// ScopeOf applies the rules to the note at rel.
func (c *Config) ScopeOf(rel string) Scope {
	var s Scope
	for _, r := range c.Rules {
		if !r.Scope.Contains(rel) {
			continue
		}
		if r.Mode == "off" && !s.Off {
			s.Off, s.Why = true, fmt.Sprintf("rule path %q (%s) keeps it from every agent", r.Scope, r.From)
		}
		if r.Agent != "" {
			s.Agent = r.Agent
		}
		if r.Mode != "" && r.Mode != "off" {
			s.Mode = r.Mode
		}
		if r.Schedule != "" {
			s.Schedule = r.Schedule
		}
		s.Agents = narrow(s.Agents, r.Agents)
		s.Events = narrow(s.Events, r.Events)
	}
	return s
}

// narrow is the intersection of what have and more allow (nil: all).
func narrow(have, more []string) []string {
	switch {
	case more == nil:
		return have
	case have == nil:
		return slices.Clone(more)
	}
	out := []string{}
	for _, v := range have {
		if slices.Contains(more, v) {
			out = append(out, v)
		}
	}
	return out
}

// compileRules compiles a layer's rules, reporting each problem with add.
func compileRules(rs []RuleSettings, from string, add func(key, format string, args ...any)) []Rule {
	var out []Rule
	for i, r := range rs {
		key := fmt.Sprintf("rules[%d]", i)
		sc, err := ignore.CompileScope(r.Path)
		if err != nil {
			add(key+".path", "rules: %v", err)
			continue
		}
		ok := true
		for _, e := range r.Events {
			if e != "created" && e != "modified" && e != "deleted" && e != "scheduled" {
				add(key+".events", "rules: path %q: event %q is not created, modified, deleted or scheduled", r.Path, e)
				ok = false
			}
		}
		switch r.Mode {
		case "", "append", "replace", "off":
		default:
			add(key+".mode", "rules: path %q: mode %q is not append, replace or off", r.Path, r.Mode)
			ok = false
		}
		for _, a := range append([]string{r.Agent}, r.Agents...) {
			if a != "" && checkAgentName(a) != nil {
				add(key+".agent", "rules: path %q: %q is not an agent name", r.Path, a)
				ok = false
			}
		}
		if r.Agent != "" && r.Agents != nil && !slices.Contains(r.Agents, r.Agent) {
			add(key+".agent", "rules: path %q: agent %q is not among its agents (%s)", r.Path, r.Agent, strings.Join(r.Agents, ", "))
			ok = false
		}
		if r.Schedule != "" {
			if _, err := schedule.Parse(r.Schedule, nil); err != nil {
				add(key+".schedule", "rules: path %q: %v", r.Path, err)
				ok = false
			}
		}
		if ok {
			out = append(out, Rule{Scope: sc, Agent: r.Agent, Agents: slices.Clone(r.Agents), Events: lowerAll(r.Events), Mode: r.Mode,
				Schedule: strings.Join(strings.Fields(r.Schedule), " "), From: from})
		}
	}
	return out
}

func lowerAll(s []string) []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strings.ToLower(v)
	}
	return out
}
