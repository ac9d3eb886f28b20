package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/stretchr/testify/require"
)

// Tie-offs in git, with the real git and knotd's merge driver set up by
// knotd git setup (the test binary is knotd, as knotdProcess runs it):
// two clones that both appended sections to the same tie-offs merge,
// rebase and cherry-pick without a conflict, each run once, in time
// order; what the driver cannot place is a git conflict with both sides'
// text.

// gitExe returns the git binary, or skips the test loudly (testutil.Git).
func gitExe(t *testing.T) string {
	t.Helper()
	return testutil.Git(t, "the merge driver tests")
}

// gitRepo runs the real git in its folders with a configuration of the
// test's own (no user or system config), and with the test binary as
// knotd for the merge driver git runs.
type gitRepo struct {
	t    *testing.T
	bin  string
	home string
}

func newGitRepo(t *testing.T) *gitRepo {
	return &gitRepo{t: t, bin: gitExe(t), home: t.TempDir()}
}

func (g *gitRepo) cmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(g.bin, append([]string{"-c", "user.name=knotd test", "-c", "user.email=test@knotd.invalid",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", "-c", "advice.detachedHead=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "HOME="+g.home,
		"GIT_EDITOR=true", asKnotd+"=1")
	return cmd
}

// run runs git and fails the test if git fails.
func (g *gitRepo) run(dir string, args ...string) string {
	g.t.Helper()
	out, err := g.cmd(dir, args...).CombinedOutput()
	if err != nil {
		g.t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// try runs git and returns its output and whether it succeeded.
func (g *gitRepo) try(dir string, args ...string) (string, bool) {
	out, err := g.cmd(dir, args...).CombinedOutput()
	return string(out), err == nil
}

// gitSection is run i of the tests: at t0 + i minutes.
func gitSection(i int, note string) tieoff.Section {
	return tieoff.Section{
		Event:  strand.Modified,
		Strand: note,
		Time:   time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute),
		RunID:  fmt.Sprintf("0190f3c2-7b1a-7c3d-9e2f-%012d", i),
		Body:   fmt.Sprintf("Reply %d to %s.\n\n- a point\n- another\n", i, note),
	}
}

// appendRuns appends the given runs to the tie-off of note in dir.
func appendRuns(t *testing.T, dir, note string, runs ...int) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	name := strings.TrimSuffix(note, ".md") + ".tieoff.md"
	for _, i := range runs {
		_, err := tieoff.Append(root, name, gitSection(i, note))
		require.NoError(t, err)
	}
}

// runsOf returns the run ids' last digits of the tie-off of note in dir,
// in file order, and fails on conflict markers or parse problems.
func runsOf(t *testing.T, dir, note string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, strings.TrimSuffix(note, ".md")+".tieoff.md"))
	require.NoError(t, err)
	require.NotContains(t, string(data), "<<<<<<<", "conflict markers in %s", note)
	secs, probs := tieoff.Parse(data)
	require.Empty(t, probs, "the merged tie-off of %s:\n%s", note, data)
	var ids []string
	for _, s := range secs {
		ids = append(ids, strings.TrimLeft(s.RunID[len(s.RunID)-12:], "0"))
	}
	if len(ids) > 0 && ids[0] == "" {
		ids[0] = "0"
	}
	return strings.Join(ids, " ")
}

// gitSetup runs knotd git setup in dir as its own process.
func gitSetup(t *testing.T, dir string) string {
	t.Helper()
	cmd := knotdProcess(t, "git", "setup", dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "knotd git setup: %s", out)
	return string(out)
}

// twoClones makes a bare origin and two clones of it, ada and bob, which
// share tie-offs of a.md (runs 0) and b.md (run 10), with the merge
// driver set up in each clone if setup. Then ada appends runs 1 and 3 to
// a's tie-off and 12 to b's, in two commits, and pushes; bob appends runs
// 2 and 4 to a's tie-off and 11 to b's, in two commits, and fetches.
func twoClones(t *testing.T, g *gitRepo, setup bool) (ada, bob string) {
	t.Helper()
	base := t.TempDir()
	origin := filepath.Join(base, "origin.git")
	g.run(base, "init", "-q", "--bare", origin)
	ada, bob = filepath.Join(base, "ada"), filepath.Join(base, "bob")
	g.run(base, "clone", "-q", origin, ada)
	writeFile(t, filepath.Join(ada, "a.md"), "# A\n")
	writeFile(t, filepath.Join(ada, "b.md"), "# B\n")
	appendRuns(t, ada, "a.md", 0)
	appendRuns(t, ada, "b.md", 10)
	if setup {
		gitSetup(t, ada)
	}
	g.run(ada, "add", "-A")
	g.run(ada, "commit", "-q", "-m", "notes")
	g.run(ada, "push", "-q", "origin", "HEAD:main")
	g.run(base, "clone", "-q", origin, bob)
	if setup {
		gitSetup(t, bob)
	}

	appendRuns(t, ada, "a.md", 1)
	g.run(ada, "commit", "-q", "-am", "ada: run 1")
	appendRuns(t, ada, "a.md", 3)
	appendRuns(t, ada, "b.md", 12)
	g.run(ada, "commit", "-q", "-am", "ada: runs 3, 12")
	g.run(ada, "push", "-q", "origin", "HEAD:main")

	appendRuns(t, bob, "a.md", 2)
	appendRuns(t, bob, "b.md", 11)
	g.run(bob, "commit", "-q", "-am", "bob: runs 2, 11")
	appendRuns(t, bob, "a.md", 4)
	g.run(bob, "commit", "-q", "-am", "bob: run 4")
	g.run(bob, "fetch", "-q", "origin")
	return ada, bob
}

func TestGitMerge_TieoffsMergeByRunID(t *testing.T) {
	setup(t)
	g := newGitRepo(t)
	tests := []struct {
		name string
		// integrate brings ada's commits into bob's clone.
		integrate func(t *testing.T, bob string) []string
		wantA     string
		wantB     string
	}{
		{"merge", func(t *testing.T, bob string) []string {
			return []string{"merge", "--no-edit", "origin/main"}
		}, "0 1 2 3 4", "10 11 12"},
		{"rebase", func(t *testing.T, bob string) []string {
			return []string{"rebase", "origin/main"}
		}, "0 1 2 3 4", "10 11 12"},
		{"cherry-pick", func(t *testing.T, bob string) []string {
			return []string{"cherry-pick", "HEAD..origin/main"}
		}, "0 1 2 3 4", "10 11 12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, bob := twoClones(t, g, true)
			args := tt.integrate(t, bob)
			out, ok := g.try(bob, args...)
			require.True(t, ok, "git %s with the driver set up: %s", strings.Join(args, " "), out)
			require.Equal(t, tt.wantA, runsOf(t, bob, "a.md"), "a's tie-off after git %s", args[0])
			require.Equal(t, tt.wantB, runsOf(t, bob, "b.md"), "b's tie-off after git %s", args[0])
			require.Empty(t, strings.TrimSpace(g.run(bob, "status", "--porcelain")), "git status after git %s", args[0])
			require.Empty(t, strings.TrimSpace(g.run(bob, "diff", "--name-only", "--diff-filter=U")), "unmerged paths")
		})
	}

	// Without the driver the same histories conflict: what the driver is
	// for.
	t.Run("without knotd git setup", func(t *testing.T) {
		_, bob := twoClones(t, g, false)
		out, ok := g.try(bob, "merge", "--no-edit", "origin/main")
		require.False(t, ok, "git merge without the driver merged the tie-offs:\n%s", out)
		require.Contains(t, out, "CONFLICT")
	})
}

// TestGitMerge_UnplaceableIsAConflict: both clones edited the same past
// section differently (and appended): git merge stops on a conflict in
// that tie-off, whose file holds both edits and base's text between
// conflict markers, with the appended runs merged around them.
func TestGitMerge_UnplaceableIsAConflict(t *testing.T) {
	setup(t)
	g := newGitRepo(t)
	ada, bob := twoClones(t, g, true)
	edit := func(dir, old, new, msg string) {
		p := filepath.Join(dir, "a.tieoff.md")
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.Contains(t, string(b), old)
		require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
		g.run(dir, "commit", "-q", "-am", msg)
	}
	edit(ada, "Reply 0 to a.md.", "Reply 0 to a.md, as Ada corrected it.", "ada: edit run 0")
	g.run(ada, "push", "-q", "origin", "HEAD:main")
	edit(bob, "Reply 0 to a.md.", "Reply 0 to a.md, as Bob corrected it.", "bob: edit run 0")
	g.run(bob, "fetch", "-q", "origin")

	out, ok := g.try(bob, "merge", "--no-edit", "origin/main")
	require.False(t, ok, "git merge of two edits of one section succeeded:\n%s", out)
	require.Contains(t, out, "CONFLICT")
	require.Equal(t, "a.tieoff.md", strings.TrimSpace(g.run(bob, "diff", "--name-only", "--diff-filter=U")))
	data, err := os.ReadFile(filepath.Join(bob, "a.tieoff.md"))
	require.NoError(t, err)
	text := string(data)
	for _, want := range []string{"<<<<<<< ours\n", "||||||| base\n", "=======\n", ">>>>>>> theirs\n",
		"as Ada corrected it", "as Bob corrected it", "Reply 0 to a.md.\n"} {
		require.Contains(t, text, want, "the conflicted tie-off:\n%s", text)
	}
	for _, i := range []int{1, 2, 3, 4} {
		require.Equal(t, 1, strings.Count(text, gitSection(i, "a.md").RunID), "run %d in the conflicted tie-off:\n%s", i, text)
	}
	// b's tie-off merged cleanly meanwhile.
	require.Equal(t, "10 11 12", runsOf(t, bob, "b.md"))
}

// TestGitSetup: knotd git setup adds its .gitattributes line once,
// keeping the file's lines (and CRLF), and sets the repository's own
// git config to run this knotd, its path quoted for the shell.
func TestGitSetup(t *testing.T) {
	setup(t)
	g := newGitRepo(t)
	tests := []struct {
		name, before, after string
	}{
		{"no file", "", attributesLine + "\n"},
		{"other lines", "*.png binary\n*.md text", "*.png binary\n*.md text\n" + attributesLine + "\n"},
		{"CRLF", "*.png binary\r\n", "*.png binary\r\n" + attributesLine + "\r\n"},
		{"already there", "*.md text\n*.tieoff.md   merge=knotd-tieoff\n", "*.md text\n*.tieoff.md   merge=knotd-tieoff\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "it's a vault")
			require.NoError(t, os.Mkdir(dir, 0o755))
			g.run(dir, "init", "-q")
			attrs := filepath.Join(dir, ".gitattributes")
			if tt.before != "" {
				require.NoError(t, os.WriteFile(attrs, []byte(tt.before), 0o644))
			}
			for range 2 { // the second time changes nothing
				gitSetup(t, dir)
				b, err := os.ReadFile(attrs)
				require.NoError(t, err)
				require.Equal(t, tt.after, string(b))
			}
			exe, err := filepath.EvalSymlinks(knotdProcess(t).Path)
			require.NoError(t, err)
			driver := strings.TrimSpace(g.run(dir, "config", "--local", "merge.knotd-tieoff.driver"))
			require.Equal(t, shellQuote(exe)+" merge-tieoff %O %A %B %P", driver)
			require.NotEmpty(t, strings.TrimSpace(g.run(dir, "config", "--local", "merge.knotd-tieoff.name")))
			attr := g.run(dir, "check-attr", "merge", "--", "notes/x.tieoff.md", "notes/x.md")
			require.Equal(t, "notes/x.tieoff.md: merge: knotd-tieoff\nnotes/x.md: merge: unspecified\n", attr)
		})
	}
	t.Run("not a git work tree", func(t *testing.T) {
		dir := t.TempDir()
		out, err := knotdProcess(t, "git", "setup", dir).CombinedOutput()
		require.Error(t, err)
		require.Contains(t, string(out), "not in a git work tree")
		_, err = os.Stat(filepath.Join(dir, ".gitattributes"))
		require.ErrorIs(t, err, os.ErrNotExist, "knotd git setup wrote outside a git work tree")
	})
}

// TestShellQuote: the driver's path survives sh whatever it holds.
func TestShellQuote(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, s := range []string{"/usr/bin/knotd", "/a b/it's $HOME `x` \"q\" \\n;|&", "'", ""} {
		out, err := exec.Command(sh, "-c", "printf %s "+shellQuote(s)).Output()
		require.NoError(t, err)
		require.Equal(t, s, string(out))
	}
	require.True(t, slices.Contains(commands, "merge-tieoff"))
}

// tieoffOf returns a tie-off of the given runs of note, as Append writes it.
func tieoffOf(t *testing.T, note string, runs ...int) string {
	t.Helper()
	dir := t.TempDir()
	appendRuns(t, dir, note, runs...)
	b, err := os.ReadFile(filepath.Join(dir, strings.TrimSuffix(note, ".md")+".tieoff.md"))
	require.NoError(t, err)
	return string(b)
}

// TestMergeTieoff: knotd merge-tieoff as git runs it: the result in OURS
// and exit 0, or conflict markers in OURS and exit 1; OURS untouched when
// a version cannot be read; the three versions whole between markers when
// one is over the size limit.
func TestMergeTieoff(t *testing.T) {
	setup(t)
	edited := func(runs ...int) string {
		return strings.Replace(tieoffOf(t, "a.md", runs...), "Reply 0 to a.md.", "Reply 0, edited.", 1)
	}
	tests := []struct {
		name               string
		base, ours, theirs string
		code               int
		want               string   // OURS afterwards, when clean
		has                []string // in OURS afterwards, when not
		says               string   // on stderr
	}{
		{name: "both appended", base: tieoffOf(t, "a.md", 0), ours: tieoffOf(t, "a.md", 0, 2), theirs: tieoffOf(t, "a.md", 0, 1),
			code: exitOK, want: tieoffOf(t, "a.md", 0, 1, 2)},
		{name: "both edited a section", base: tieoffOf(t, "a.md", 0), ours: edited(0, 2), theirs: strings.Replace(tieoffOf(t, "a.md", 0, 1), "Reply 0 to a.md.", "Reply 0, theirs.", 1),
			code: exitFailed, has: []string{"<<<<<<< ours\n", "Reply 0, edited.", "Reply 0, theirs.", "Reply 0 to a.md.", gitSection(1, "a.md").RunID, gitSection(2, "a.md").RunID},
			says: "notes/a.tieoff.md: conflict: run " + gitSection(0, "a.md").RunID + ": both sides changed it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for i, c := range []string{tt.base, tt.ours, tt.theirs} {
				p := filepath.Join(dir, fmt.Sprintf(".merge_file_%d", i))
				require.NoError(t, os.WriteFile(p, []byte(c), 0o600))
				paths = append(paths, p)
			}
			code, _, errOut := knotd(t, "merge-tieoff", paths[0], paths[1], paths[2], "notes/a.tieoff.md")
			require.Equal(t, tt.code, code, errOut)
			got, err := os.ReadFile(paths[1])
			require.NoError(t, err)
			if tt.want != "" {
				require.Equal(t, tt.want, string(got))
			}
			for _, h := range tt.has {
				require.Contains(t, string(got), h)
			}
			require.Contains(t, errOut, tt.says)
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, left, 3, "temporary files left behind")
		})
	}

	t.Run("a version cannot be read", func(t *testing.T) {
		dir := t.TempDir()
		ours := filepath.Join(dir, "ours")
		require.NoError(t, os.WriteFile(ours, []byte(tieoffOf(t, "a.md", 0)), 0o600))
		code, _, errOut := knotd(t, "merge-tieoff", filepath.Join(dir, "missing"), ours, ours, "a.tieoff.md")
		require.Equal(t, exitFailed, code)
		require.Contains(t, errOut, "nothing merged; git reports a conflict")
		got, err := os.ReadFile(ours)
		require.NoError(t, err)
		require.Equal(t, tieoffOf(t, "a.md", 0), string(got))
	})

	t.Run("usage", func(t *testing.T) {
		code, _, errOut := knotd(t, "merge-tieoff", "a", "b")
		require.Equal(t, exitUsage, code)
		require.Contains(t, errOut, "BASE OURS THEIRS")
	})

	t.Run("too large", func(t *testing.T) {
		dir := t.TempDir()
		base, ours, theirs := filepath.Join(dir, "base"), filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
		require.NoError(t, os.WriteFile(base, []byte("base text"), 0o600))
		require.NoError(t, os.WriteFile(ours, []byte(tieoffOf(t, "a.md", 0)), 0o600))
		f, err := os.Create(theirs)
		require.NoError(t, err)
		_, err = f.WriteString("theirs starts here\n")
		require.NoError(t, err)
		_, err = f.WriteAt([]byte("theirs ends here\n"), tieoff.MaxSize)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		code, _, errOut := knotd(t, "merge-tieoff", base, ours, theirs, "a.tieoff.md")
		require.Equal(t, exitFailed, code)
		require.Contains(t, errOut, "too large to merge by run id")
		fi, err := os.Stat(ours)
		require.NoError(t, err)
		wantSize := int64(len("<<<<<<< ours\n"+tieoffOf(t, "a.md", 0)+"||||||| base\nbase text\n=======\n")) + tieoff.MaxSize + int64(len("theirs ends here\n>>>>>>> theirs\n"))
		require.Equal(t, wantSize, fi.Size())
		g, err := os.Open(ours)
		require.NoError(t, err)
		defer g.Close()
		head := make([]byte, 200)
		_, err = g.Read(head)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(string(head), "<<<<<<< ours\n## Event: Modified\n"), "%q", head)
	})
}

// TestGitMerge_EditsAndReplaceMode: one clone edits a past section by
// hand and, in replace mode, replaces a tie-off with its newest section;
// the other appended to both. git merge is clean: the edit is kept, the
// replaced sections stay removed, every other run is there once, in time
// order.
func TestGitMerge_EditsAndReplaceMode(t *testing.T) {
	setup(t)
	g := newGitRepo(t)
	ada, bob := twoClones(t, g, true)
	p := filepath.Join(ada, "a.tieoff.md")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), "Reply 0 to a.md.", "Reply 0 to a.md, corrected by hand.", 1)), 0o644))
	root, err := os.OpenRoot(ada)
	require.NoError(t, err)
	require.NoError(t, tieoff.Replace(root, "b.tieoff.md", gitSection(13, "b.md")))
	require.NoError(t, root.Close())
	g.run(ada, "commit", "-q", "-am", "ada: an edit, and b in replace mode")
	g.run(ada, "push", "-q", "origin", "HEAD:main")
	g.run(bob, "fetch", "-q", "origin")

	out, ok := g.try(bob, "merge", "--no-edit", "origin/main")
	require.True(t, ok, "git merge: %s", out)
	require.Equal(t, "0 1 2 3 4", runsOf(t, bob, "a.md"))
	a, err := os.ReadFile(filepath.Join(bob, "a.tieoff.md"))
	require.NoError(t, err)
	require.Contains(t, string(a), "Reply 0 to a.md, corrected by hand.")
	require.Equal(t, "11 13", runsOf(t, bob, "b.md"), "b's tie-off: bob's run 11 and ada's replacement 13; 10 and 12 replaced")
}
