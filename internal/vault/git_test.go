package vault

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
)

// A vault in git, driven with the real git: branch switches, pulls,
// stashes and rebases answer exactly the notes that changed; git status is
// never dirtied by a knotd machine file; a fresh clone's --once runs
// exactly the notes changed since their last answer.

// gitBin returns the git binary, or skips the test loudly (testutil.Git).
func gitBin(t *testing.T) string {
	t.Helper()
	return testutil.Git(t, "the git vault tests")
}

// git runs git in dir with a configuration of the test's own, and returns
// its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(gitBin(t), append([]string{"-c", "user.name=knotd test", "-c", "user.email=test@knotd.invalid",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(),
		"GIT_AUTHOR_DATE=2026-11-23T12:00:00Z", "GIT_COMMITTER_DATE=2026-11-23T12:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// gitStatus returns git status --porcelain's paths with their status.
func gitStatus(t *testing.T, dir string) []string {
	t.Helper()
	var st []string
	for _, l := range strings.Split(strings.TrimRight(git(t, dir, "status", "--porcelain", "--untracked-files=all"), "\n"), "\n") {
		if l != "" {
			st = append(st, l)
		}
	}
	slices.Sort(st)
	return st
}

// commitAll commits everything in dir.
func commitAll(t *testing.T, dir, msg string) {
	t.Helper()
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
}

func TestGit_VaultAnswersExactlyWhatChanged(t *testing.T) {
	gitBin(t)
	origin := filepath.Join(t.TempDir(), "origin.git")
	git(t, filepath.Dir(origin), "init", "-q", "--bare", origin)

	e := newEnv(t)
	git(t, e.root, "init", "-q")
	git(t, e.root, "remote", "add", "origin", origin)
	e.write(".knot/config.yaml", "debounce: 1s\n")
	e.write("a.md", "# A\n")
	e.write("b.md", "# B\n")
	e.write("c.md", "# C\n")
	commitAll(t, e.root, "notes")
	e.onceFresh() // first contact: adopts
	if st := gitStatus(t, e.root); len(st) != 0 {
		t.Fatalf("git status after knotd's first contact = %v; want clean", st)
	}
	e.write("a.md", "# A, edited\n")
	if got := ran(e.onceFresh()); !slices.Equal(got, []string{"Modified a.md"}) {
		t.Fatalf("runs = %v", got)
	}
	// Only the note (its knot_session) and its tie-off changed; no knotd
	// machine file shows, and git add -A picks none up.
	if st := gitStatus(t, e.root); !slices.Equal(st, []string{" M a.md", "?? a.tieoff.md"}) {
		t.Errorf("git status after a run = %q; want the note and its tie-off only", st)
	}
	commitAll(t, e.root, "answered")
	if files := git(t, e.root, "ls-files"); strings.Contains(files, "devices") || strings.Contains(files, "state") {
		t.Errorf("git add -A picked up knotd machine files:\n%s", files)
	}
	git(t, e.root, "push", "-q", "origin", "main")

	// A branch: an edit answered there; back on main the note is main's
	// version again, which main's tie-off answers: nothing runs.
	git(t, e.root, "checkout", "-q", "-b", "feature")
	e.write("b.md", "# B, on the feature branch\n")
	if got := ran(e.onceFresh()); !slices.Equal(got, []string{"Modified b.md"}) {
		t.Fatalf("runs on the feature branch = %v", got)
	}
	commitAll(t, e.root, "feature")
	git(t, e.root, "checkout", "-q", "main")
	if got := ran(e.onceFresh()); !slices.Equal(got, []string{"Modified b.md"}) {
		// main's b.md was adopted, never answered: back on main it is a
		// change from what knotd last saw, and runs once.
		t.Errorf("runs after switching back to main = %v; want b.md once", got)
	}
	commitAll(t, e.root, "main answers b")
	git(t, e.root, "checkout", "-q", "feature")
	if got := ran(e.onceFresh()); len(got) != 0 {
		t.Errorf("runs after switching to feature again = %v; want none: its tie-off answers its version", got)
	}
	git(t, e.root, "checkout", "-q", "main")
	if got := ran(e.onceFresh()); len(got) != 0 {
		t.Errorf("runs after switching to main again = %v; want none", got)
	}

	// A stash: the edit goes away (the answered version comes back) and
	// returns.
	e.write("c.md", "# C, edited then stashed\n")
	git(t, e.root, "stash", "-q")
	if got := ran(e.onceFresh()); len(got) != 0 {
		t.Errorf("runs after git stash = %v; want none", got)
	}
	git(t, e.root, "stash", "pop", "-q")
	if got := ran(e.onceFresh()); !slices.Equal(got, []string{"Modified c.md"}) {
		t.Errorf("runs after git stash pop = %v; want c.md once", got)
	}
	commitAll(t, e.root, "c")
	git(t, e.root, "push", "-q", "origin", "main")

	// Another clone edits a note and pushes it with its answer, and one
	// without: a pull runs only the unanswered one.
	other := newEnv(t)
	mustDo(t, os.RemoveAll(other.root))
	git(t, filepath.Dir(other.root), "clone", "-q", origin, other.root)
	other.onceFresh()
	other.write("a.md", strings.Replace(other.read("a.md"), "# A, edited", "# A, edited on the other clone", 1))
	if got := ran(other.onceFresh()); !slices.Equal(got, []string{"Modified a.md"}) {
		t.Fatalf("the other clone ran %v", got)
	}
	other.write("c.md", strings.Replace(other.read("c.md"), "stashed", "stashed, then edited on the other clone", 1))
	commitAll(t, other.root, "other clone")
	git(t, other.root, "push", "-q", "origin", "main")
	git(t, e.root, "pull", "-q", "--no-rebase", "origin", "main")
	if got := ran(e.onceFresh()); !slices.Equal(got, []string{"Modified c.md"}) {
		t.Errorf("runs after git pull = %v; want only c.md (a.md is answered in the pulled tie-off)", got)
	}
	commitAll(t, e.root, "after pull")

	// A rebase onto a new upstream commit replays a local edit: what the
	// rebase changes on disk is run once.
	git(t, e.root, "push", "-q", "origin", "main")
	other.write("b.md", "# B, from the other clone\n")
	commitAll(t, other.root, "b upstream")
	git(t, other.root, "pull", "-q", "--no-rebase", "origin", "main")
	git(t, other.root, "push", "-q", "origin", "main")
	e.write("a.md", strings.Replace(e.read("a.md"), "the other clone", "the other clone, and here", 1))
	commitAll(t, e.root, "local a")
	if got := ran(e.onceFresh()); !slices.Equal(got, []string{"Modified a.md"}) {
		t.Fatalf("runs of the local edit = %v", got)
	}
	commitAll(t, e.root, "local a answered")
	git(t, e.root, "pull", "-q", "--rebase", "origin", "main")
	if got := ran(e.onceFresh()); !slices.Equal(got, []string{"Modified b.md"}) {
		t.Errorf("runs after git pull --rebase = %v; want only b.md", got)
	}
	commitAll(t, e.root, "rebased")
	git(t, e.root, "push", "-q", "origin", "main")
	if st := gitStatus(t, e.root); len(st) != 0 {
		t.Errorf("git status at the end = %v; want clean", st)
	}

	// A note edited and committed without knotd; a fresh clone's first
	// --once runs it, and only it.
	e.write("c.md", strings.Replace(e.read("c.md"), "# C", "# C (edited without knotd)", 1))
	commitAll(t, e.root, "edited without knotd")
	git(t, e.root, "push", "-q", "origin", "main")
	fresh := newEnv(t)
	mustDo(t, os.RemoveAll(fresh.root))
	git(t, filepath.Dir(fresh.root), "clone", "-q", origin, fresh.root)
	if got := ran(fresh.onceFresh()); !slices.Equal(got, []string{"Modified c.md"}) {
		t.Errorf("a fresh clone's --once ran %v; want exactly c.md, changed since its last answer", got)
	}
	if st := gitStatus(t, fresh.root); !slices.Equal(st, []string{" M c.tieoff.md"}) && !slices.Equal(st, []string{" M c.md", " M c.tieoff.md"}) {
		t.Errorf("git status of the fresh clone = %v; want only c.md's answer", st)
	}
}

// TestGit_CheckoutOfKnotdsKeysRunsNothing: with write_session: true, git
// checkout -- . discards the knot_session knotd wrote before a run:
// nothing runs, nothing is written back, and the tracked tree stays clean.
// By default knotd never dirties a tracked note at all.
func TestGit_CheckoutOfKnotdsKeysRunsNothing(t *testing.T) {
	for _, writes := range []bool{true, false} {
		t.Run(map[bool]string{true: "write_session true", false: "by default"}[writes], func(t *testing.T) {
			gitBin(t)
			e := newEnv(t)
			cfg := "default_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", "", fakeagent.Echo, "--session={session}")
			if writes {
				cfg = "write_session: true\n" + cfg
			}
			e.userConfig(cfg)
			git(t, e.root, "init", "-q")
			e.write(".gitignore", "*.tieoff.md\n")
			for _, n := range []string{"a.md", "b.md", "c.md"} {
				e.write(n, "# "+n+"\n")
			}
			commitAll(t, e.root, "notes")
			e.onceFresh() // first contact: adopts
			for _, n := range []string{"a.md", "b.md", "c.md"} {
				e.write(n, e.read(n)+"A question.\n")
			}
			commitAll(t, e.root, "questions")
			if got := ran(e.onceFresh()); len(got) != 3 {
				t.Fatalf("runs = %v; want the three notes", got)
			}
			want := []string{" M a.md", " M b.md", " M c.md"}
			if !writes {
				want = nil
			}
			if st := gitStatus(t, e.root); !slices.Equal(st, want) {
				t.Fatalf("git status after the runs = %q; want %q", st, want)
			}
			git(t, e.root, "checkout", "--", ".")
			if got := ran(e.onceFresh()); len(got) != 0 {
				t.Errorf("runs after git checkout -- . = %v; want none", got)
			}
			if st := gitStatus(t, e.root); len(st) != 0 {
				t.Errorf("git status after knotd's pass = %q; want clean", st)
			}
			e.write("a.md", e.read("a.md")+"A real edit.\n")
			if got := ran(e.onceFresh()); !slices.Equal(got, []string{"Modified a.md"}) {
				t.Errorf("runs after a real edit = %v; want a.md once", got)
			}
		})
	}
}
