package main

import (
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestArgs_Errors: a mistyped flag gets a suggestion, a duration without a
// unit an example, and every subcommand's flags are in knotd's words; the
// exact messages, since they are what a new user reads.
func TestArgs_Errors(t *testing.T) {
	v, _ := setup(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{v, "--debouce", "2s"}, "knotd: unknown flag --debouce; did you mean --debounce? (see knotd --help)\n"},
		{[]string{"--debounce", "2", v}, "knotd: --debounce 2: add a unit, e.g. 2s (ms, s, m and h are units) (see knotd --help)\n"},
		{[]string{"--max-wait", "1.5", v}, "knotd: --max-wait 1.5: add a unit, e.g. 1.5s (ms, s, m and h are units) (see knotd --help)\n"},
		{[]string{"--timeout", "10", v}, "knotd: --timeout 10: add a unit, e.g. 10s (ms, s, m and h are units) (see knotd --help)\n"},
		{[]string{"--poll", "soon", v}, "knotd: --poll soon: not a duration (write a number with a unit: 300ms, 2s, 10m, 1h) (see knotd --help)\n"},
		{[]string{"--concurency", "2", v}, "knotd: unknown flag --concurency; did you mean --concurrency? (see knotd --help)\n"},
		{[]string{"--concurrency", "two", v}, "knotd: --concurrency two: not a whole number (see knotd --help)\n"},
		{[]string{"--once=yes", v}, "knotd: --once=yes: a switch takes no value (write --once, or --once=false) (see knotd --help)\n"},
		{[]string{v, "--agent"}, "knotd: --agent needs a value (see knotd --help)\n"},
		{[]string{"--frobnicate", v}, "knotd: unknown flag --frobnicate (see knotd --help)\n"},
		{[]string{"--vresion"}, "knotd: unknown flag --vresion; did you mean --version? (see knotd --help)\n"},
		{[]string{"--dry", v}, "knotd: unknown flag --dry; did you mean --dry-run? (see knotd --help)\n"},
		{[]string{"runs", v, "--jsn"}, "knotd runs: unknown flag --jsn; did you mean --json? (see knotd runs --help)\n"},
		{[]string{"runs", "--limit", "5m", v}, "knotd runs: --limit 5m: not a whole number (see knotd runs --help)\n"},
		{[]string{"trust", v, "--force"}, "knotd trust: unknown flag --force (see knotd trust --help)\n"},
		{[]string{"reset", "a.md", "--confg", "x"}, "knotd reset: unknown flag --confg; did you mean --config? (see knotd reset --help)\n"},
		{[]string{v, v}, "knotd: one VAULT at most, got 2: " + v + " " + v + " (see knotd --help)\n"},
		// Every command that takes a VAULT takes one, and says so alike.
		{[]string{"status", v, v}, "knotd status: one VAULT at most, got 2: " + v + " " + v + " (see knotd status --help)\n"},
		{[]string{"retry", v, v}, "knotd retry: one VAULT at most, got 2: " + v + " " + v + " (see knotd retry --help)\n"},
		{[]string{"runs", v, v}, "knotd runs: one VAULT at most, got 2: " + v + " " + v + " (see knotd runs --help)\n"},
		{[]string{"doctor", v, v}, "knotd doctor: one VAULT at most, got 2: " + v + " " + v + " (see knotd doctor --help)\n"},
		{[]string{"console", v, v}, "knotd console: one VAULT at most, got 2: " + v + " " + v + " (see knotd console --help)\n"},
		{[]string{"trust", v, v}, "knotd trust: one VAULT at most, got 2: " + v + " " + v + " (see knotd trust --help)\n"},
		{[]string{"service", "install", v, v}, "knotd service install: one VAULT at most, got 2: " + v + " " + v + " (see knotd service --help)\n"},
	}
	for _, tt := range tests {
		code, out, errOut := knotd(t, tt.args...)
		if code != exitUsage || out != "" || errOut != tt.want {
			t.Errorf("knotd %q: exit %d, stdout %q, stderr\n%q; want exit 2 and\n%q", tt.args, code, out, errOut, tt.want)
		}
	}
}

// TestArgs_FlagsAfterVault: every command takes its flags before or after
// its positional arguments, and "--" ends the flags.
func TestArgs_FlagsAfterVault(t *testing.T) {
	v, _ := setup(t)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	for _, args := range [][]string{
		{v, "--once"},
		{v, "--once", "--all", "--json"},
		{"--once", v, "--debounce", "1s"},
	} {
		if code, _, errOut := knotd(t, args...); code != exitOK {
			t.Errorf("knotd %q: exit %d: %s", args, code, errOut)
		}
	}
	if code, out, errOut := knotd(t, "trust", v, "--help"); code != exitOK || !strings.HasPrefix(out, "usage: knotd trust") {
		t.Errorf("knotd trust VAULT --help: exit %d, %q %q", code, out, errOut)
	}
	if code, out, errOut := knotd(t, "reset", filepath.Join(v, "a.md"), "--config", filepath.Join(t.TempDir(), "none.yaml")); code == exitOK || !strings.Contains(errOut, "none.yaml") {
		t.Errorf("knotd reset NOTE --config MISSING: exit %d, %q %q; want the --config file reported missing", code, out, errOut)
	}
	if code, out, errOut := knotd(t, "--once", "--", v); code != exitOK {
		t.Errorf("knotd --once -- VAULT: exit %d, %q %q", code, out, errOut)
	}
}

func TestSuggestFlag(t *testing.T) {
	for _, tt := range []struct{ typo, want string }{
		{"debouce", "debounce"},
		{"debonuce", "debounce"},
		{"maxwait", "max-wait"},
		{"max_wait", "max-wait"},
		{"log-leve", "log-level"},
		{"jsno", "json"},
		{"explain", "explain-ignore"},
		{"x", ""},
		{"frobnicate", ""},
		{"al", "all"},
	} {
		if got := suggestFlag(mainFlagSet(&options{}), tt.typo); got != tt.want {
			t.Errorf("suggestFlag(%q) = %q; want %q", tt.typo, got, tt.want)
		}
	}
}

// TestVersionOf: --version names the module version, the commit and its
// time, local changes, and the Go release, as the build recorded them.
func TestVersionOf(t *testing.T) {
	for _, tt := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3, built with go1.26.8"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "d15848c0123456789abcdef0123456789abcdef0"}, {Key: "vcs.time", Value: "2026-11-23T22:00:00Z"}, {Key: "vcs.modified", Value: "true"},
		}}, "(devel), commit d15848c01234 (2026-11-23T22:00:00Z) + local changes, built with go1.26.8"},
		{debug.BuildInfo{}, "(devel)"},
	} {
		if got := versionOf(&tt.bi); got != tt.want {
			t.Errorf("versionOf(%+v) = %q; want %q", tt.bi, got, tt.want)
		}
	}
}

// TestConfigErrors: a configuration mistake is reported by knotd with the
// file, the line where it is, the key and what was expected: exit 2.
func TestConfigErrors(t *testing.T) {
	v, _ := setup(t)
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	for _, tt := range []struct{ yaml, want string }{
		{"default_agent: mine\nagents:\n  mine:\n    command: [echo]\n   prompt: stdin\n",
			"knotd: configuration error: config " + cfg + ": line 5: this line is indented differently from the lines above it (the keys of one map, and the '- ' items of one list, start in the same column; a key's value is indented under it)\n"},
		{"debounce: 2s\nagents:\n  - claude\n",
			"knotd: configuration error: config " + cfg + ": line 3: agents: expected agents by name, each with its keys (mine: {command: [mytool]}), found a list\n"},
	} {
		writeFile(t, cfg, tt.yaml)
		code, _, errOut := knotd(t, "--once", v, "--config", cfg)
		if code != exitUsage || errOut != tt.want {
			t.Errorf("config\n%s: exit %d, stderr\n%q; want exit 2 and\n%q", tt.yaml, code, errOut, tt.want)
		}
	}
}

// TestLogLevelDebug: --log-level debug says more than info: which knotd,
// on which vault, with which configuration.
func TestLogLevelDebug(t *testing.T) {
	v, c := setup(t)
	writeFile(t, filepath.Join(c, "config.yaml"), "debounce: 3s\n")
	_, _, info := knotd(t, "--once", v)
	code, _, debug := knotd(t, "--once", "--log-level", "debug", v)
	if code != exitOK {
		t.Fatalf("--log-level debug: exit %d: %s", code, debug)
	}
	for _, want := range []string{`level=DEBUG msg="knotd starting" version=`, "vault=" + v, `level=DEBUG msg=configuration files=[` + filepath.Join(c, "config.yaml") + `]`, "debounce=3s", `agents="[digest=digest]"`, `msg="run transcripts" dir=`} {
		if !strings.Contains(debug, want) {
			t.Errorf("--log-level debug does not say %q:\n%s", want, debug)
		}
		if strings.Contains(info, want) {
			t.Errorf("--log-level info says %q too:\n%s", want, info)
		}
	}
}

// TestArgs_Commands: knotd help is knotd --help (knotd help CMD is knotd
// CMD --help); a mistyped subcommand gets a suggestion, as a mistyped
// flag does, unless a folder of that name exists (then it is the VAULT);
// pause and resume print their own help.
func TestArgs_Commands(t *testing.T) {
	v, _ := setup(t)
	t.Chdir(v)
	writeFile(t, filepath.Join(v, "stats", "a.md"), "# A\n")
	_, mainHelp, _ := knotd(t, "--help")
	_, runsHelp, _ := knotd(t, "runs", "--help")
	for _, tt := range []struct {
		args       []string
		code       int
		out, wantE string
	}{
		{[]string{"help"}, exitOK, mainHelp, ""},
		{[]string{"help", "runs"}, exitOK, runsHelp, ""},
		{[]string{"help", "staus"}, exitUsage, "", "knotd help: no command \"staus\"; did you mean \"status\"? (knotd --help lists the commands)\n"},
		{[]string{"staus"}, exitUsage, "", "knotd: unknown command \"staus\"; did you mean \"status\"? (no folder staus exists either, to watch as the VAULT) (see knotd --help)\n"},
		{[]string{"--once", "doctr"}, exitUsage, "", "knotd: unknown command \"doctr\"; did you mean \"doctor\"? (no folder doctr exists either, to watch as the VAULT) (see knotd --help)\n"},
		{[]string{"--once", "stats"}, exitOK, "", ""}, // a folder: the VAULT
	} {
		code, out, errOut := knotd(t, tt.args...)
		if tt.code == exitOK && tt.out == "" {
			if code != exitOK {
				t.Errorf("knotd %q: exit %d: %s", tt.args, code, errOut)
			}
			continue
		}
		if code != tt.code || out != tt.out || errOut != tt.wantE {
			t.Errorf("knotd %q: exit %d, stdout %.80q, stderr %q; want exit %d, stdout %.80q, stderr %q", tt.args, code, out, errOut, tt.code, tt.out, tt.wantE)
		}
	}
	if !strings.HasPrefix(mainHelp, "knotd watches") {
		t.Errorf("knotd --help: %.80q", mainHelp)
	}
	for _, cmd := range []string{"pause", "resume"} {
		code, out, errOut := knotd(t, cmd, "--help")
		if code != exitOK || !strings.HasPrefix(out, "usage: knotd "+cmd+" ") || strings.Contains(out, "knotd status [--json]") {
			t.Errorf("knotd %s --help: exit %d, stderr %q, stdout\n%s\nwant its own usage", cmd, code, errOut, out)
		}
	}
}
