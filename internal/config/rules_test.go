package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScopeOf(t *testing.T) {
	e := newConfigEnv(t)
	e.writeUser(t, `agents:
  journaler: {command: [j]}
  claude: {command: [c]}
rules:
  - path: journal/
    agent: journaler
    events: [created, modified]
  - path: private/**
    mode: off
  - path: "*.draft.md"
    events: [created]
    mode: replace
  - path: team/
    agents: [claude, digest]
`)
	e.writeVault(t, `rules:
  - path: journal/secret/
    mode: off
  - path: team/
    agents: [digest]
`)
	c := e.mustLoad(t, Settings{})
	tests := []struct {
		rel  string
		want Scope
	}{
		{"a.md", Scope{}},
		{"journal/2026-11-23.md", Scope{Agent: "journaler", Events: []string{"created", "modified"}}},
		{"journal/x.draft.md", Scope{Agent: "journaler", Events: []string{"created"}, Mode: "replace"}},
		{"private/keys.md", Scope{Off: true}},
		{"journal/secret/a.md", Scope{Off: true, Agent: "journaler", Events: []string{"created", "modified"}}},
		{"team/plan.md", Scope{Agents: []string{"digest"}}},
	}
	for _, tt := range tests {
		got := c.ScopeOf(tt.rel)
		why := got.Why
		got.Why = ""
		require.Equal(t, tt.want, got, tt.rel)
		require.Equal(t, tt.want.Off, why != "", "%s: Why = %q", tt.rel, why)
	}
	require.Contains(t, c.ScopeOf("private/a.md").Why, `rule path "private/**"`)
}

func TestRules_Errors(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"rules:\n  - path: '!x/'\n", "line 2: rules: path \"!x/\": a rule's path cannot be negated"},
		{"rules:\n  - path: x/\n    events: [saved]\n", "line 3: rules: path \"x/\": event \"saved\" is not created, modified, deleted or scheduled"},
		{"rules:\n  - path: x/\n    schedule: daily 25:00\n", "line 3: rules: path \"x/\": schedule: invalid"},
		{"rules:\n  - path: x/\n    schedule: daily 07:00 Mars/Olympus\n", "unknown time zone \"Mars/Olympus\""},
		{"rules:\n  - path: x/\n    mode: sometimes\n", "mode \"sometimes\" is not append, replace or off"},
		{"rules:\n  - path: x/\n    agent: nobody\n", "names the agent \"nobody\", which is not defined"},
		{"rules:\n  - path: x/\n    agent: digest\n    agents: [claude]\n", "agent \"digest\" is not among its agents"},
	}
	for _, tt := range tests {
		e := newConfigEnv(t)
		e.writeUser(t, tt.yaml)
		_, err := e.load(Settings{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load with\n%s= %v; want %q", tt.yaml, err, tt.want)
		}
	}
}

// TestScopeOf_Schedule: a rule's schedule applies to the notes under its
// path, the last matching rule's wins, and events: [scheduled] is allowed.
func TestScopeOf_Schedule(t *testing.T) {
	e := newConfigEnv(t)
	e.writeUser(t, `rules:
  - path: daily/
    schedule: daily 07:00 Europe/Paris
    events: [scheduled, modified]
  - path: daily/weekly/
    schedule: weekly fri  17:00
`)
	c := e.mustLoad(t, Settings{})
	require.Equal(t, Scope{Schedule: "daily 07:00 Europe/Paris", Events: []string{"scheduled", "modified"}}, c.ScopeOf("daily/brief.md"))
	require.Equal(t, Scope{Schedule: "weekly fri 17:00", Events: []string{"scheduled", "modified"}}, c.ScopeOf("daily/weekly/review.md"))
	require.Equal(t, Scope{}, c.ScopeOf("notes/a.md"))
}
