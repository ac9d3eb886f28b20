package main

import (
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/testutil"
)

// testService is a service with fixed paths, for the golden files.
var testService = service{
	Vault: "/home/me/My Notes/100% done",
	Exe:   "/home/me/go/bin/knotd",
	Path:  "/home/me/.npm-global/bin:/home/me/.local/bin:/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin",
	Home:  "/home/me",
	Slug:  "100__done-1a2b3c4d",
}

// TestService_Files: the systemd unit and the launchd plist, as written
// for a vault whose path has a space and a %.
func TestService_Files(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "")
	var out strings.Builder
	if err := (systemdUser{}).install(t.Context(), testService, serviceOptions{dryRun: true}, &out, &out); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "testdata/service/systemd.golden", []byte(out.String()))
	out.Reset()
	if err := (launchdAgent{}).install(t.Context(), testService, serviceOptions{dryRun: true}, &out, &out); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "testdata/service/launchd.golden", []byte(strings.ReplaceAll(out.String(), gui(), "gui/UID")))
}

func TestServicePath(t *testing.T) {
	for _, tt := range []struct{ current, exeDir, want string }{
		{"/usr/bin:/home/me/.nvm/bin:.:relative:/usr/bin:", "/home/me/go/bin",
			"/usr/bin:/home/me/.nvm/bin:/home/me/go/bin:/home/me/.npm-global/bin:/home/me/.local/bin:/opt/homebrew/bin:/usr/local/bin:/bin"},
		{"", "/opt/knotd", "/opt/knotd:/home/me/.npm-global/bin:/home/me/.local/bin:/home/me/go/bin:/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin"},
	} {
		if got := servicePath(tt.current, "/home/me", tt.exeDir); got != tt.want {
			t.Errorf("servicePath(%q) =\n%s; want\n%s", tt.current, got, tt.want)
		}
	}
}

func TestSystemdQuoteAndSlug(t *testing.T) {
	for in, want := range map[string]string{
		`/home/me/notes`:      `"/home/me/notes"`,
		`/a b/100% "x" $HOME`: `"/a b/100%% \"x\" $$HOME"`,
		`C:\notes`:            `"C:\\notes"`,
	} {
		if got := systemdQuote(in); got != want {
			t.Errorf("systemdQuote(%q) = %s; want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{"notes": "notes", "My Notes": "My_Notes", ".hidden": "_hidden", "wiki.v2": "wiki.v2", "": "vault", "日記": "__"} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q; want %q", in, got, want)
		}
	}
}
