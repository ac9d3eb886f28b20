package vault

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/vault/internal/reconcile"
	"github.com/knotd/knotd/internal/watcher"
)

// TestOnce_FrontmatterCannotSmuggleArgv: a synced note's frontmatter is
// someone else's input. A knot_model that looks like a flag, or holds
// spaces, newlines or shell syntax, is refused with a failure section and
// never reaches an agent's argv; a plain model name arrives as the value
// of --model; a knot_agent the user did not define is refused; a
// knot_session that is a path leaves no file outside the vault.
func TestOnce_FrontmatterCannotSmuggleArgv(t *testing.T) {
	e := newEnv(t)
	e.useAgent("claude", fakeagent.Claude)
	e.onceFresh()
	hostile := map[string]string{
		"flag.md":       "---\nknot_model: \"--dangerously-skip-permissions\"\n---\nx\n",
		"flag-eq.md":    "---\nknot_model: \"-m=evil\"\n---\nx\n",
		"spaces.md":     "---\nknot_model: \"sonnet --dangerously-skip-permissions\"\n---\nx\n",
		"newline.md":    "---\nknot_model: \"sonnet\\n--dangerously-skip-permissions\"\n---\nx\n",
		"shell.md":      "---\nknot_model: \"$(touch /tmp/knotd-pwned)\"\n---\nx\n",
		"list.md":       "---\nknot_model: [\"--a\", \"b\"]\n---\nx\n",
		"preset.md":     "---\nknot_agent: codex\n---\nx\n",
		"path-agent.md": "---\nknot_agent: /bin/sh\n---\nx\n",
	}
	for rel, content := range hostile {
		e.write(rel, content)
	}
	e.write("model.md", "---\nknot_model: sonnet-4\n---\nx\n")
	e.write("session.md", "---\nknot_session: ../../../../escape\n---\nx\n")
	sum := e.onceFresh()
	for rel := range hostile {
		secs := e.sections(rel)
		if len(secs) != 1 || !secs[0].Failed {
			t.Errorf("%s: %v; want one failure section", rel, e.events(rel))
		}
	}
	if sum.Failed != len(hostile)+1 {
		t.Errorf("%d failed runs; want %d", sum.Failed, len(hostile)+1)
	}
	var sawModel bool
	for _, c := range e.calls() {
		for i, a := range c.Args {
			if strings.Contains(a, "dangerously") || strings.Contains(a, "evil") || strings.Contains(a, "pwned") || a == "--a" {
				t.Errorf("a note's frontmatter reached argv: %q", c.Args)
			}
			if a == "--model" && i+1 < len(c.Args) && c.Args[i+1] == "sonnet-4" {
				sawModel = true
			}
		}
	}
	if !sawModel {
		t.Errorf("knot_model: sonnet-4 did not arrive as --model sonnet-4: %+v", e.calls())
	}
	if _, err := os.Lstat("/tmp/knotd-pwned"); err == nil {
		t.Error("a knot_model ran a shell")
	}
	if secs := e.sections("session.md"); len(secs) != 1 || !secs[0].Failed {
		t.Errorf("session.md: %v; want one failure section: a knot_session is an id, not a path", e.events("session.md"))
	}
	assertNothingOutside(t, e, "escape")
}

// assertNothingOutside fails if a file whose name starts with name exists
// in any of the four directories above the vault.
func assertNothingOutside(t *testing.T, e *env, name string) {
	t.Helper()
	dir := e.root
	for range 4 {
		dir = filepath.Dir(dir)
		matches, err := filepath.Glob(filepath.Join(dir, name+"*"))
		mustDo(t, err)
		if len(matches) > 0 {
			t.Errorf("knotd wrote outside the vault: %v", matches)
		}
	}
}

// TestReconcile_HintThroughSymlinkedDir: a hint for a path whose directory
// is a symbolic link out of the vault (the directory was replaced by a
// link after its event) is not a strand: nothing outside the vault is read
// or written, and no agent runs for a reply that could not be written.
func TestReconcile_HintThroughSymlinkedDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	outside := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(outside, "secret.md"), []byte("# Outside\n"), 0o644))
	e.write("notes/real.md", "# Real\n")
	e.onceFresh()
	mustDo(t, os.RemoveAll(e.abs("notes")))
	mustDo(t, os.Symlink(outside, e.abs("notes")))
	e.write("notes-file.md", "# Here\n")
	sum := e.onceFresh()
	for _, r := range sum.Runs {
		if strings.HasPrefix(r.Strand, "notes/secret") {
			t.Errorf("ran a strand through a symbolic link: %+v", r)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "secret.tieoff.md")); err == nil {
		t.Error("knotd wrote a tie-off outside the vault")
	}
	if len(e.calls()) != 1 || sum.Failed != 0 {
		// notes/real.md's Deleted is not run: its section could never be
		// written (its folder is a link out of the vault), see
		// TestOnce_TieOffThatCannotBeWritten.
		t.Errorf("%d agent calls, %d failed; want 1 (notes-file.md), none failed", len(e.calls()), sum.Failed)
	}
	v := e.open()
	defer e.close(v)
	if pending, err := v.recon.Reconcile([]watcher.Hint{{Path: "notes/secret.md"}}); err != nil || len(pending) != 0 {
		t.Errorf("reconcile of a hint through the link = %v, %v; want nothing", pending, err)
	}
	for _, rel := range []string{"notes/secret.md", "notes/real.md"} {
		if _, where, err := v.recon.LstatStrand(rel); err != nil || where != reconcile.Absent {
			t.Errorf("lstatStrand(%q) = %v, %v; want absent", rel, where, err)
		}
	}
}

// TestOnce_StateFilesArePrivate walks the vault's folder of the state
// directory after runs, a failure and a rename: every directory is 0700
// and every file 0600.
func TestOnce_StateFilesArePrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix modes")
	}
	e := newEnv(t)
	e.useAgent("claude", fakeagent.Claude)
	e.onceFresh()
	e.write("a.md", "# A\n")
	e.write("bad.md", "---\nknot_mode: maybe\n---\n")
	e.onceFresh()
	e.rename("a.md", "sub/b.md")
	e.onceFresh()
	n := 0
	err := filepath.WalkDir(e.folder().Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v; want %v", p, got, want)
		}
		n++
		return nil
	})
	mustDo(t, err)
	if n < 3 {
		t.Errorf("only %d entries in the vault's folder", n)
	}
}

// TestOnce_SecretsStayOutOfTheVault: secrets in knotd's environment and in
// an agent's configured env never appear in a tie-off, a transcript or any
// other file knotd writes, whatever the outcome of the run.
func TestOnce_SecretsStayOutOfTheVault(t *testing.T) {
	const secret = "sk-knotd-test-s3cr3t-0123456789"
	t.Setenv("KNOTD_TEST_API_KEY", secret)
	t.Setenv("ANTHROPIC_API_KEY", secret)
	e := newEnv(t)
	withSecret := func(name, behaviour string, args ...string) string {
		s := e.fakeAgentYAML(name, "", behaviour, args...)
		return strings.Replace(s, "env: {", "env: {OPENAI_API_KEY: \""+secret+"\", ", 1)
	}
	e.userConfig("default_agent: ok\nagents:\n" + withSecret("ok", fakeagent.Echo) +
		withSecret("fail", fakeagent.Fail) + withSecret("hang", fakeagent.Hang) + "    timeout: 1s\n" +
		withSecret("empty", fakeagent.Empty) +
		e.fakeAgentYAML("claude", "claude", fakeagent.Claude))
	e.onceFresh()
	for _, a := range []string{"ok", "fail", "hang", "empty", "claude"} {
		e.write(a+".md", "---\nknot_agent: "+a+"\n---\n# "+a+"\n")
	}
	sum := e.onceFresh()
	if sum.Ran != 5 {
		t.Fatalf("ran %d; want 5", sum.Ran)
	}
	if got := e.calls(); !slices.ContainsFunc(got, func(c fakeagent.Call) bool { return c.Env["KNOTD_TEST_API_KEY"] == secret }) {
		t.Errorf("the agent did not get its environment (the test could not see a leak): %+v", got)
	}
	err := filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
	mustDo(t, err)
}
