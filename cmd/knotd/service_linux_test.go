package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeSystemctl puts a fake systemctl first on PATH (a real process: the
// test binary under that name, see fakeTool) and returns the file where
// it records its calls.
func fakeSystemctl(t *testing.T) (calls string) {
	t.Helper()
	bin := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, os.Symlink(exe, filepath.Join(bin, "systemctl")))
	calls = filepath.Join(t.TempDir(), "calls")
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	t.Setenv(envFakeToolLog, calls)
	return calls
}

// TestService_SystemdUser: knotd service install writes the vault's
// systemd user unit (knotd's own executable, the vault's absolute path, a
// PATH with the agents' usual folders) and enables and starts it with
// systemctl --user; --no-start only enables it, --dry-run prints it and
// does nothing; uninstall disables it and removes the file.
func TestService_SystemdUser(t *testing.T) {
	v, _ := setup(t) // XDG_CONFIG_HOME is a t.TempDir()
	calls := fakeSystemctl(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	exe, err = filepath.EvalSymlinks(exe)
	require.NoError(t, err)
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	readCalls := func() string {
		b, err := os.ReadFile(calls)
		if os.IsNotExist(err) {
			return ""
		}
		require.NoError(t, err)
		require.NoError(t, os.Remove(calls))
		return string(b)
	}

	// --dry-run: the unit on stdout, nothing written, nothing run.
	t.Chdir(v)
	code, out, errOut := knotd(t, "service", "install", "--dry-run")
	if code != exitOK || !strings.Contains(out, "ExecStart=\""+exe+"\" \""+v+"\"\n") || !strings.Contains(out, "would run: systemctl --user enable --now knotd-") {
		t.Fatalf("service install --dry-run: exit %d, %q\n%s", code, errOut, out)
	}
	units := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "systemd", "user")
	if _, err := os.Stat(units); !os.IsNotExist(err) || readCalls() != "" {
		t.Fatalf("--dry-run wrote or ran something (%v)", err)
	}

	t.Chdir(t.TempDir())
	code, out, errOut = knotd(t, "service", "install", v)
	if code != exitOK {
		t.Fatalf("service install: exit %d, %q %q", code, out, errOut)
	}
	entries, err := os.ReadDir(units)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	unit := entries[0].Name()
	if !strings.HasPrefix(unit, "knotd-"+filepath.Base(v)+"-") || !strings.HasSuffix(unit, ".service") {
		t.Errorf("the unit is named %s; want knotd-%s-HASH.service", unit, filepath.Base(v))
	}
	fi, err := os.Stat(filepath.Join(units, unit))
	require.NoError(t, err)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("the unit's mode is %v; want 0644", fi.Mode().Perm())
	}
	b, err := os.ReadFile(filepath.Join(units, unit))
	require.NoError(t, err)
	text := string(b)
	for _, want := range []string{
		"ExecStart=\"" + exe + "\" \"" + v + "\"\n",
		"Environment=\"PATH=" + filepath.SplitList(os.Getenv("PATH"))[0] + ":", // the current PATH, first
		":" + filepath.Join(home, ".npm-global", "bin") + ":",
		":" + filepath.Join(home, ".local", "bin") + ":",
		":/opt/homebrew/bin",
		"Restart=on-failure\n", "WantedBy=default.target\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the unit lacks %q:\n%s", want, text)
		}
	}
	if got, want := readCalls(), "systemctl --user daemon-reload\nsystemctl --user enable --now "+unit+"\n"; got != want {
		t.Errorf("systemctl was run as\n%s; want\n%s", got, want)
	}
	for _, want := range []string{"wrote " + filepath.Join(units, unit), "journalctl --user -u " + unit} {
		if !strings.Contains(out, want) {
			t.Errorf("service install does not say %q:\n%s", want, out)
		}
	}

	// Again, VAULT before the flag, --no-start: rewritten, enabled only.
	if code, out, errOut := knotd(t, "service", "install", v, "--no-start"); code != exitOK {
		t.Fatalf("service install --no-start: exit %d, %q %q", code, out, errOut)
	}
	if got, want := readCalls(), "systemctl --user daemon-reload\nsystemctl --user enable "+unit+"\n"; got != want {
		t.Errorf("--no-start ran systemctl as\n%s; want\n%s", got, want)
	}

	// A failing systemctl: its words in the error.
	t.Setenv(envFakeToolExit, "1")
	t.Setenv(envFakeToolSay, "Failed to connect to bus: No medium found\n")
	code, _, errOut = knotd(t, "service", "install", v)
	if code != exitFailed || !strings.Contains(errOut, "systemctl --user daemon-reload: exit status 1: Failed to connect to bus") {
		t.Errorf("a failing systemctl: exit %d, %q", code, errOut)
	}
	readCalls()
	t.Setenv(envFakeToolExit, "0")
	t.Setenv(envFakeToolSay, "")

	code, out, errOut = knotd(t, "service", "uninstall", v)
	if code != exitOK || !strings.Contains(out, "removed "+filepath.Join(units, unit)) {
		t.Fatalf("service uninstall: exit %d, %q %q", code, out, errOut)
	}
	if got, want := readCalls(), "systemctl --user disable --now "+unit+"\nsystemctl --user daemon-reload\n"; got != want {
		t.Errorf("uninstall ran systemctl as\n%s; want\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(units, unit)); !os.IsNotExist(err) {
		t.Errorf("the unit is still there: %v", err)
	}
	if code, _, errOut := knotd(t, "service", "uninstall", v); code != exitFailed || !strings.Contains(errOut, "no service for the vault "+v) {
		t.Errorf("uninstalling again: exit %d, %q", code, errOut)
	}
	if code, _, errOut := knotd(t, "service", "restart", v); code != exitUsage || !strings.Contains(errOut, "say install or uninstall") {
		t.Errorf("service restart: exit %d, %q", code, errOut)
	}
}
