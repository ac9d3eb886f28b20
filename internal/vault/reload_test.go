package vault

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReload: a reload applies a changed configuration from the next run
// on; the settings the watcher and the scheduler are built with keep
// their values until the next start, and say so; a configuration that
// does not load leaves the one in force.
func TestReload(t *testing.T) {
	e := newEnv(t)
	e.flags.Debounce, e.flags.MaxWait = nil, nil // from the files, so that a file can change them
	e.userConfig("default_agent: digest\n")
	v := e.open()
	tests := []struct {
		name        string
		user, vault string
		wantErr     string
		wantAgent   string
		atNextStart []string
	}{
		{name: "unchanged", user: "default_agent: digest\n", wantAgent: "digest"},
		{name: "a new agent", user: "default_agent: echo\nagents:\n" + e.fakeAgentYAML("echo", "", "echo"), wantAgent: "echo"},
		{name: "a mistake", user: "default_agent: [\n", wantErr: "config", wantAgent: "echo"},
		{name: "an unknown agent", user: "default_agent: nobody\n", wantErr: "nobody", wantAgent: "echo"},
		{name: "the debounce", user: "default_agent: digest\ndebounce: 7s\n", wantAgent: "digest", atNextStart: []string{"debounce"}},
		{name: "notify", user: "default_agent: digest\nnotify: {url: \"https://ntfy.sh/ada\"}\n", wantAgent: "digest", atNextStart: []string{"notify"}},
		{name: "an untrusted vault config", user: "default_agent: digest\n", vault: "agents:\n" + e.fakeAgentYAML("v", "", "echo"), wantErr: "trust", wantAgent: "digest"},
	}
	debounce := v.config().Debounce
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.userConfig(tt.user)
			if tt.vault != "" {
				e.write(".knot/config.yaml", tt.vault)
			}
			r, err := v.Reload("test")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.ErrorIs(t, err, ErrConfig)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, tt.wantAgent, v.config().DefaultAgent)
			require.True(t, slices.Equal(tt.atNextStart, r.AtNextStart), "AtNextStart = %v; want %v", r.AtNextStart, tt.atNextStart)
			require.Equal(t, debounce, v.config().Debounce, "the debounce changed before a restart")
			require.False(t, v.config().Notify.On(), "notify changed before a restart (the notifier is built as knotd starts)")
		})
	}
}

// TestReloadIfChanged: a config file that changes is noticed once, and
// one that does not, never.
func TestReloadIfChanged(t *testing.T) {
	e := newEnv(t)
	e.userConfig("default_agent: digest\n")
	v := e.open()
	v.reloader.reloadIfChanged()
	require.Equal(t, "digest", v.config().DefaultAgent)
	e.userConfig("default_agent: echo\nagents:\n" + e.fakeAgentYAML("echo", "", "echo"))
	v.reloader.reloadIfChanged()
	require.Equal(t, "echo", v.config().DefaultAgent, "a changed user config was not reloaded")
	e.write(".knot/config.yaml", "default_agent: digest\n")
	v.reloader.reloadIfChanged()
	require.Equal(t, "digest", v.config().DefaultAgent, "a new vault config was not reloaded")
	v.reloader.reloadMu.Lock()
	changed := v.reloader.configChanged()
	v.reloader.reloadMu.Unlock()
	require.False(t, changed, "unchanged files seen as changed")
}
