package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vault"
	"github.com/stretchr/testify/require"
)

// TestRun_HelpMentionsEveryFlag: knotd --help exits 0 and documents every
// flag of docs/commands.md, spelled as the documentation spells them.
func TestRun_HelpMentionsEveryFlag(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		code, out, errOut := knotd(t, arg)
		if code != exitOK || errOut != "" {
			t.Errorf("knotd %s: exit %d, stderr %q; want 0 and nothing", arg, code, errOut)
		}
		for _, flag := range []string{"--once", "--agent NAME", "--config FILE", "--debounce DUR", "--concurrency N",
			"--timeout DUR", "--json", "--dry-run", "--all", "--poll DUR", "--log-level", "--log-format", "--explain-ignore PATH"} {
			if !strings.Contains(out, "\n  "+flag) {
				t.Errorf("knotd %s does not document %s:\n%s", arg, flag, out)
			}
		}
		for _, status := range []string{"0 every run succeeded", "1 at least one", "2 usage or configuration error", "3 the vault is in use"} {
			if !strings.Contains(out, status) {
				t.Errorf("knotd %s does not explain exit status %q", arg, status)
			}
		}
		if n := strings.Count(out, "Usage:"); n != 1 {
			t.Errorf("knotd %s printed the usage %d times", arg, n)
		}
	}
}

// failingAgentConfig writes a user config whose default agent exits 7.
func failingAgentConfig(t *testing.T, configDir string) {
	t.Helper()
	writeFile(t, filepath.Join(configDir, "config.yaml"), fmt.Sprintf(
		"default_agent: broken\nagents:\n  broken:\n    command: [%q, \"it broke\", \"7\"]\n    env: {%s: %s}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Fail))
}

// TestRun_OnceExitStatus: --once exits 0 when every run succeeded or there
// was nothing to do, 1 when a run failed, 2 for a usage or configuration
// error, 3 when another knotd holds the vault.
func TestRun_OnceExitStatus(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, vaultDir, configDir string) []string // returns the arguments
		want  int
		say   string // in stderr
	}{
		{"nothing to do", func(t *testing.T, v, _ string) []string {
			return []string{"--once", v}
		}, exitOK, ""},
		{"runs succeeded", func(t *testing.T, v, _ string) []string {
			knotd(t, "--once", v) // adopt
			writeFile(t, filepath.Join(v, "a.md"), "# A\n")
			return []string{"--once", v}
		}, exitOK, ""},
		{"debounce above the default max-wait", func(t *testing.T, v, _ string) []string {
			return []string{"--once", "--debounce", "20s", v}
		}, exitOK, ""},
		{"max-wait under debounce", func(t *testing.T, v, _ string) []string {
			return []string{"--once", "--debounce", "20s", "--max-wait", "10s", v}
		}, exitUsage, "max_wait 10s is shorter than debounce 20s"},
		{"a run failed", func(t *testing.T, v, c string) []string {
			failingAgentConfig(t, c)
			knotd(t, "--once", v)
			writeFile(t, filepath.Join(v, "a.md"), "# A\n")
			writeFile(t, filepath.Join(v, "b.md"), "# B\n")
			return []string{"--once", v}
		}, exitFailed, ""},
		{"unknown flag", func(t *testing.T, v, _ string) []string {
			return []string{"--once", "--bogus", v}
		}, exitUsage, "unknown flag --bogus"},
		{"two vaults", func(t *testing.T, v, _ string) []string {
			return []string{"--once", v, v}
		}, exitUsage, "one VAULT at most"},
		{"json without once", func(t *testing.T, v, _ string) []string {
			return []string{"--json", v}
		}, exitUsage, "--json goes with --once"},
		{"zero concurrency", func(t *testing.T, v, _ string) []string {
			return []string{"--once", "--concurrency", "0", v}
		}, exitUsage, "--concurrency must be at least 1"},
		{"negative debounce", func(t *testing.T, v, _ string) []string {
			return []string{"--once", "--debounce", "-1s", v}
		}, exitUsage, "--debounce must be positive"},
		{"bad log level", func(t *testing.T, v, _ string) []string {
			return []string{"--once", "--log-level", "loud", v}
		}, exitUsage, "--log-level"},
		{"vault missing", func(t *testing.T, v, _ string) []string {
			return []string{"--once", filepath.Join(v, "nope")}
		}, exitUsage, "no such file or directory"},
		{"config file missing", func(t *testing.T, v, _ string) []string {
			return []string{"--once", "--config", filepath.Join(v, "nope.yaml"), v}
		}, exitUsage, "nope.yaml"},
		{"config not yaml", func(t *testing.T, v, c string) []string {
			writeFile(t, filepath.Join(c, "config.yaml"), "debounce: [\n")
			return []string{"--once", v}
		}, exitUsage, "config.yaml"},
		{"config unknown key", func(t *testing.T, v, c string) []string {
			writeFile(t, filepath.Join(c, "config.yaml"), "debounse: 2s\n")
			return []string{"--once", v}
		}, exitUsage, `unknown key "debounse"`},
		{"unknown agent", func(t *testing.T, v, _ string) []string {
			return []string{"--once", "--agent", "nosuch", v}
		}, exitUsage, "nosuch"},
		{"poll too short", func(t *testing.T, v, _ string) []string {
			return []string{"--once", "--poll", "1ms", v}
		}, exitUsage, "poll"},
		{"untrusted vault config", func(t *testing.T, v, _ string) []string {
			writeFile(t, filepath.Join(v, ".knot", "config.yaml"), "agents:\n  evil:\n    command: [\"rm\", \"-rf\", \"/\"]\n")
			return []string{"--once", v}
		}, exitUsage, "knotd trust $VAULT"},
		{"locked", func(t *testing.T, v, _ string) []string {
			l, err := statedir.Acquire(filepath.Join(os.Getenv("XDG_STATE_HOME"), "knotd"), v)
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Release() })
			return []string{"--once", v}
		}, exitLocked, fmt.Sprintf("pid %d", os.Getpid())},
		{"locked dry run", func(t *testing.T, v, _ string) []string {
			knotd(t, "--once", v)
			l, err := statedir.Acquire(filepath.Join(os.Getenv("XDG_STATE_HOME"), "knotd"), v)
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Release() })
			return []string{"--once", "--dry-run", v}
		}, exitLocked, "in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, c := setup(t)
			args := tt.setup(t, v, c)
			code, _, errOut := knotd(t, args...)
			if code != tt.want {
				t.Errorf("knotd %q: exit %d; want %d\nstderr:\n%s", args, code, tt.want, errOut)
			}
			say := strings.ReplaceAll(tt.say, "$VAULT", v)
			if !strings.Contains(errOut, say) {
				t.Errorf("knotd %q: stderr does not say %q:\n%s", args, say, errOut)
			}
		})
	}
}

// TestRun_OnceJSONSummary: --once --json prints the pass as JSON.
func TestRun_OnceJSONSummary(t *testing.T) {
	v, c := setup(t)
	writeFile(t, filepath.Join(v, "old.md"), "# Old\n")
	code, out, _ := knotd(t, "--once", "--json", v)
	var sum vault.Summary
	if code != exitOK || json.Unmarshal([]byte(out), &sum) != nil || sum.Adopted != 1 || sum.Ran != 0 {
		t.Fatalf("first pass: exit %d, output %s; want 1 adopted as JSON", code, out)
	}
	failingAgentConfig(t, c)
	writeFile(t, filepath.Join(v, "old.md"), "# Old\n\nedited\n")
	code, out, _ = knotd(t, "--once", "--json", "--agent", "digest", v)
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != exitOK {
		t.Fatalf("second pass: exit %d, %v:\n%s", code, err, out)
	}
	if sum.Ran != 1 || sum.OK != 1 || len(sum.Runs) != 1 || sum.Runs[0].Strand != "old.md" || sum.Runs[0].Agent != "digest" {
		t.Errorf("summary = %+v; want one ok digest run of old.md (--agent wins over the config)", sum)
	}
}

// TestRun_OnceTextSummary: without --json the pass says what it adopted,
// each run, and the totals.
func TestRun_OnceTextSummary(t *testing.T) {
	v, c := setup(t)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	_, out, _ := knotd(t, "--once", v)
	if !strings.Contains(out, "adopted 1 existing note as") {
		t.Errorf("first pass output:\n%s", out)
	}
	failingAgentConfig(t, c)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n\nmore\n")
	code, out, _ := knotd(t, "--once", v)
	for _, want := range []string{"failed   Modified a.md", "exit status 7", "runs: 1 (0 ok, 1 failed)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != exitFailed {
		t.Errorf("exit %d; want %d", code, exitFailed)
	}
	b, err := os.ReadFile(filepath.Join(v, "a.tieoff.md"))
	if err != nil || !strings.Contains(string(b), "## Status: failed") || !strings.Contains(string(b), "it broke") {
		t.Errorf("the failure section is missing or does not show stderr: %v\n%s", err, b)
	}
}

// TestRun_DryRun: --dry-run prints the event and the prompt and changes
// nothing.
func TestRun_DryRun(t *testing.T) {
	v, _ := setup(t)
	knotd(t, "--once", v)
	writeFile(t, filepath.Join(v, "n.md"), "# N\n\nwhat would run\n")
	code, out, errOut := knotd(t, "--once", "--dry-run", v)
	if code != exitOK || !strings.Contains(out, "==> Created n.md (agent digest)\n## Event Context\n") || !strings.Contains(out, "what would run") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(v, "n.md")); string(b) != "# N\n\nwhat would run\n" {
		t.Errorf("the dry run wrote into the strand:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(v, "n.tieoff.md")); err == nil {
		t.Error("the dry run wrote a tie-off")
	}
}

// TestRun_ExplainIgnore: --explain-ignore answers for a path given
// relative to the current directory or to the vault, or absolute inside
// it, and refuses one outside.
func TestRun_ExplainIgnore(t *testing.T) {
	v, _ := setup(t)
	writeFile(t, filepath.Join(v, ".knotignore"), "drafts/\n")
	for _, tt := range []struct {
		path, want string
	}{
		{"drafts/x.md", `drafts/x.md: ignored by .knotignore:1 pattern "drafts/"`},
		{filepath.Join(v, "notes", "a.md"), "notes/a.md: not ignored; it is a note"},
		{".obsidian/app.md", ".obsidian/app.md: ignored"},
	} {
		code, out, errOut := knotd(t, "--explain-ignore", tt.path, v)
		if code != exitOK || !strings.HasPrefix(out, tt.want) {
			t.Errorf("--explain-ignore %s: exit %d, %q %q; want %q", tt.path, code, out, errOut, tt.want)
		}
	}
	if code, _, errOut := knotd(t, "--explain-ignore", filepath.Dir(v), v); code != exitUsage || !strings.Contains(errOut, "not inside the vault") {
		t.Errorf("a path outside the vault: exit %d, %s", code, errOut)
	}

	// A relative PATH is read from the current directory when that leads
	// inside the vault, else from the vault's root.
	writeFile(t, filepath.Join(v, "notes", "a.md"), "# A\n")
	writeFile(t, filepath.Join(v, "drafts", "x.md"), "# X\n")
	for _, tt := range []struct {
		cwd, path, want string
	}{
		{filepath.Join(v, "notes"), "a.md", "notes/a.md: not ignored"},
		{filepath.Join(v, "notes"), "../drafts/x.md", "drafts/x.md: ignored"},
		{filepath.Join(v, "notes"), "drafts/x.md", "drafts/x.md: ignored"}, // not in notes/: the vault's
		{filepath.Dir(v), filepath.Join(filepath.Base(v), "drafts", "x.md"), "drafts/x.md: ignored"},
		{t.TempDir(), "notes/a.md", "notes/a.md: not ignored"},
		{v, "notes/new.md", "notes/new.md: not ignored"},
	} {
		t.Chdir(tt.cwd)
		code, out, errOut := knotd(t, "--explain-ignore", tt.path, v)
		if code != exitOK || !strings.HasPrefix(out, tt.want) {
			t.Errorf("in %s, --explain-ignore %s: exit %d, %q %q; want %q", tt.cwd, tt.path, code, out, errOut, tt.want)
		}
	}
	t.Chdir(filepath.Join(v, "notes"))
	if code, _, errOut := knotd(t, "--explain-ignore", "../../elsewhere.md", v); code != exitUsage || !strings.Contains(errOut, "not inside the vault") {
		t.Errorf("a relative path outside the vault: exit %d, %s", code, errOut)
	}
}

// TestRun_Trust: a vault config that defines an agent is refused until
// the user trusts it with knotd trust; any change makes it untrusted
// again.
func TestRun_Trust(t *testing.T) {
	v, _ := setup(t)
	cfg := filepath.Join(v, ".knot", "config.yaml")
	writeFile(t, cfg, fmt.Sprintf("default_agent: echo\nagents:\n  echo:\n    command: [%q]\n    env: {%s: %s}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo))
	if code, _, errOut := knotd(t, "--once", v); code != exitUsage || !strings.Contains(errOut, "knotd trust "+v) {
		t.Fatalf("untrusted: exit %d, %s", code, errOut)
	}
	code, out, errOut := knotd(t, "trust", v)
	if code != exitOK || !strings.Contains(out, "trusted "+cfg) || !strings.Contains(out, "agents echo") {
		t.Fatalf("knotd trust: exit %d, %q %q", code, out, errOut)
	}
	knotd(t, "--once", v)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	if code, out, errOut := knotd(t, "--once", v); code != exitOK || !strings.Contains(out, "ok       Created  a.md") {
		t.Fatalf("trusted: exit %d, %q %q", code, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(v, "a.tieoff.md")); !strings.Contains(string(b), "ECHO: ## Event Context") {
		t.Errorf("the trusted vault agent did not run:\n%s", b)
	}
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("debounce: 1s\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := knotd(t, "--once", v); code != exitUsage || !strings.Contains(errOut, "changed since you trusted it") {
		t.Errorf("changed after trust: exit %d, %s", code, errOut)
	}
}

// TestRun_WatchStopsCleanly: in watch mode knotd processes changes until
// its context ends (SIGINT), then returns nil: exit status 0.
func TestRun_WatchStopsCleanly(t *testing.T) {
	v, _ := setup(t)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testutil.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--debounce", "50ms", "--log-format", "json", v}, strings.NewReader(""), &testutil.Buffer{}, &stderr)
	}()
	testutil.WaitFor(t, waitTimeout, "knotd to watch", func() bool { return strings.Contains(stderr.String(), `"msg":"watcher: watching"`) })
	writeFile(t, filepath.Join(v, "a.md"), "# A\n\nedited while watched\n")
	testutil.WaitFor(t, waitTimeout, "the run", func() bool {
		b, _ := os.ReadFile(filepath.Join(v, "a.tieoff.md"))
		return strings.Contains(string(b), "## Event: Modified")
	})
	cancel()
	if err := <-done; err != nil || exitCode(err) != exitOK {
		t.Errorf("run = %v (exit %d); want nil, exit 0", err, exitCode(err))
	}
	logs := stderr.String()
	for _, want := range []string{`"msg":"run started"`, `"msg":"run finished"`, `"strand":"a.md"`, `"outcome":"ok"`, `"msg":"stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the JSON log lacks %s:\n%s", want, logs)
		}
	}
}

// TestRun_Version prints a version and exits 0.
func TestRun_Version(t *testing.T) {
	if code, out, _ := knotd(t, "--version"); code != exitOK || !strings.HasPrefix(out, "knotd ") {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

// TestRun_Reset: knotd reset NOTE gives the note a new conversation: a new
// session in the state (and in the note's knot_session, where knotd wrote
// one: write_session: true), and its next run starts afresh in it. While
// another knotd holds the vault, the note gets knot_session: new, which
// that knotd turns into a new session (replacing "new" in the note where
// it writes sessions; by default "new" stays, and later runs continue the
// new session).
func TestRun_Reset(t *testing.T) {
	for _, writes := range []bool{true, false} {
		t.Run(map[bool]string{true: "write_session true", false: "by default"}[writes], func(t *testing.T) {
			testReset(t, writes)
		})
	}
}

func testReset(t *testing.T, writes bool) {
	v, c := setup(t)
	cfg := fmt.Sprintf(
		"default_agent: echo\nagents:\n  echo:\n    command: [%q, \"--session={session}\"]\n    env: {%s: %s}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Echo)
	if writes {
		cfg = "write_session: true\n" + cfg
	}
	writeFile(t, filepath.Join(c, "config.yaml"), cfg)
	note := filepath.Join(v, "a.md")
	knotd(t, "--once", v)
	writeFile(t, note, "# A\n")
	knotd(t, "--once", v)
	sessionOf := func() string {
		b, err := os.ReadFile(note)
		require.NoError(t, err)
		doc, err := frontmatter.Parse(b)
		require.NoError(t, err)
		if doc.Fields.NewSession {
			return "new"
		}
		return doc.Fields.Session
	}
	answeredIn := func(n int) string {
		t.Helper()
		secs := tieoffSections(t, filepath.Join(v, "a.tieoff.md"))
		if len(secs) != n {
			t.Fatalf("the tie-off has %d sections; want %d", len(secs), n)
		}
		return secs[n-1].Session
	}
	s1 := answeredIn(1)
	if got := sessionOf(); writes && got != s1 || !writes && got != "" {
		t.Fatalf("the note's knot_session after the first run = %q (the run's session %s)", got, s1)
	}
	code, out, errOut := knotd(t, "reset", note)
	m := regexp.MustCompile(`new session (\S+) \(was ` + regexp.QuoteMeta(s1) + `\)`).FindStringSubmatch(out)
	if code != exitOK || m == nil || m[1] == s1 {
		t.Fatalf("knotd reset: exit %d, %q %q; want a new session (was %s)", code, out, errOut, s1)
	}
	s2 := m[1]
	if got := sessionOf(); writes && got != s2 || !writes && got != "" {
		t.Fatalf("the note's knot_session after knotd reset = %q; want %q", got, map[bool]string{true: s2}[writes])
	}
	if code, out, _ := knotd(t, "--once", v); code != exitOK || strings.Contains(out, "Modified") {
		t.Errorf("the pass after reset ran: %s", out)
	}
	b, _ := os.ReadFile(note)
	writeFile(t, note, string(b)+"A new question.\n")
	knotd(t, "--once", v)
	if got := answeredIn(2); got != s2 {
		t.Errorf("the run after reset answered in %s; want the new session %s", got, s2)
	}

	// Another knotd holds the vault.
	held, err := vault.Open(v, vault.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	code, out, errOut = knotd(t, "reset", note)
	if cerr := held.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	if code != exitOK || sessionOf() != "new" || !strings.Contains(out, "knot_session: new") {
		t.Fatalf("knotd reset while the vault is held: exit %d, %q %q; the note's session %s", code, out, errOut, sessionOf())
	}
	b, _ = os.ReadFile(note)
	writeFile(t, note, string(b)+"Another question.\n")
	knotd(t, "--once", v)
	s3 := answeredIn(3)
	if s3 == s2 || s3 == "" {
		t.Errorf("after knot_session: new the run answered in %q; want a new session", s3)
	}
	if got, want := sessionOf(), map[bool]string{true: s3, false: "new"}[writes]; got != want {
		t.Errorf("after knot_session: new the note holds %q; want %q", got, want)
	}
	b, _ = os.ReadFile(note)
	writeFile(t, note, string(b)+"A third question.\n")
	knotd(t, "--once", v)
	if got := answeredIn(4); got != s3 {
		t.Errorf("the run after that answered in %s; want the session knot_session: new started, %s", got, s3)
	}

	if code, _, errOut := knotd(t, "reset", filepath.Join(v, "a.tieoff.md")); code == exitOK || !strings.Contains(errOut, "not a note") {
		t.Errorf("knotd reset of a tie-off: exit %d, %s", code, errOut)
	}
	if code, _, _ := knotd(t, "reset"); code != exitUsage {
		t.Errorf("knotd reset without a note: exit %d; want %d", code, exitUsage)
	}
}

// tieoffSections parses the tie-off at path.
func tieoffSections(t *testing.T, path string) []tieoff.Section {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	secs, errs := tieoff.Parse(b)
	if len(errs) > 0 {
		t.Fatalf("tie-off %s: %v", path, errs)
	}
	return secs
}

// TestRun_HelpAndReadmeAgree: knotd --help and the flag table of the
// manual's command-line page (docs/commands.md) name the same flags.
func TestRun_HelpAndReadmeAgree(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "commands.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n## Command line\n")
	require.True(t, ok, "docs/commands.md has no Command line section")
	section, _, _ = strings.Cut(section, "\n## ")
	flagName := regexp.MustCompile("`(--[a-z-]+)")
	inReadme := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `--") {
			for _, m := range flagName.FindAllStringSubmatch(strings.SplitN(line, "|", 3)[1], -1) {
				inReadme[m[1]] = true
			}
		}
	}
	_, help, _ := knotd(t, "--help")
	inHelp := map[string]bool{}
	for _, m := range regexp.MustCompile(`\n  (--[a-z-]+)`).FindAllStringSubmatch(help, -1) {
		inHelp[m[1]] = true
	}
	for f := range inHelp {
		if !inReadme[f] {
			t.Errorf("knotd --help has %s; docs/commands.md's table does not", f)
		}
	}
	for f := range inReadme {
		if !inHelp[f] {
			t.Errorf("docs/commands.md's table has %s; knotd --help does not", f)
		}
	}
	if len(inHelp) < 10 {
		t.Errorf("found only %d flags in knotd --help:\n%s", len(inHelp), help)
	}
}

// TestVaultArg_ANoteIsNoVault: a note given where a vault folder is asked
// for (knotd retry NOTE, knotd --once NOTE) is a usage error that says
// what VAULT is and how to answer one note.
func TestVaultArg_ANoteIsNoVault(t *testing.T) {
	note := filepath.Join(t.TempDir(), "n.md")
	writeFile(t, note, "# N\n")
	for _, args := range [][]string{{"retry", note}, {"--once", note}, {"status", note}} {
		code, _, stderr := knotd(t, args...)
		if code != 2 || !strings.Contains(stderr, "not a folder") || !strings.Contains(stderr, "knotd run "+note) {
			t.Errorf("knotd %q: exit %d, stderr %q; want 2 and how to answer one note", args, code, stderr)
		}
	}
}
