package ignore

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitFixture is a set of nested .gitignore files whose verdicts were taken
// from git itself (git ls-files --others --ignored --exclude-standard);
// TestRules_AgreesWithGit checks them again against the installed git.
var gitFixture = map[string]string{
	"": `# comment
*.tmp.md
!notes
/top.md
drafts/
doc/*.md
**/logs
a/**/b
foo/**
!foo/keep.md
\#hash.md
\!bang.md
trail.md   
esc\ .md\ 
[!a-c]x.md
[^d]y.md
*.[[:digit:]].md
a**z.md
build
!build/keep.md
`,
	"notes": `secret*.md
!/keep.tmp.md
sub/
!drafts/
`,
	"notes/sub": "!*.md\n",
}

// gitVerdicts are git's answers for files in gitFixture: true means ignored.
var gitVerdicts = map[string]bool{
	"x.tmp.md":              true,
	"notes/x.tmp.md":        true,  // *.tmp.md at any depth
	"notes/keep.tmp.md":     false, // re-included by the deeper, anchored !/keep.tmp.md
	"notes/sub/keep.tmp.md": true,  // notes/sub/ is excluded: nothing inside comes back
	"notes/sub/n.md":        true,
	"notes/sub/secret2.md":  true,
	"notes/secret1.md":      true,
	"top.md":                true,
	"notes/top.md":          false, // /top.md is anchored to the root
	"notes/drafts/d.md":     false, // drafts/ excluded at the root, !drafts/ deeper wins
	"drafts.md":             false,
	"doc/a.md":              true,
	"doc/sub/a.md":          false, // doc/*.md does not cross a slash
	"logs/l.md":             true,
	"logs/deep/logs/l.md":   true,
	"a/b/c/n.md":            true, // a/**/b matches a/b
	"a/x/y/b/n.md":          true,
	"a/bb.md":               false,
	"foo/keep.md":           false, // foo/** does not exclude foo itself, so ! works
	"foo/other.md":          true,
	"foo/bar/keep.md":       true,
	"#hash.md":              true,
	"!bang.md":              true,
	"trail.md":              true,
	"esc .md ":              true,
	"dx.md":                 true,
	"ax.md":                 false,
	"dy.md":                 false,
	"ey.md":                 true,
	"v.1.md":                true,
	"v.a.md":                false,
	"abcz.md":               true, // ** inside a name is *
	"az.md":                 true,
	"build/keep.md":         true, // build is excluded: ! cannot reach inside
	"n.md":                  false,
	"sp ace/n.md":           false,
	"notes/.gitignore":      false,
	"notes/sub/.gitignore":  true,
}

func mustRules(t *testing.T, files map[string]string) *Rules {
	t.Helper()
	r := &Rules{}
	for dir, content := range files {
		if err := r.setFile(dir, ".gitignore", []byte(content)); err != nil {
			t.Fatalf("SetIgnoreFile(%q): %v", dir, err)
		}
	}
	return r
}

func TestRules_GitignoreSemantics(t *testing.T) {
	r := mustRules(t, gitFixture)
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for k := range gitVerdicts {
			if !yield(k) {
				return
			}
		}
	}) {
		want := gitVerdicts[p]
		if got := r.Ignored(p, false); got != want {
			_, why := r.Explain(p)
			t.Errorf("Ignored(%q) = %v; want %v (%s)", p, got, want, why)
		}
	}
}

func TestRules_Directories(t *testing.T) {
	r := mustRules(t, gitFixture)
	r.ConfigDir = "obsidian-config"
	tests := []struct {
		path string
		want bool
	}{
		{"notes", false},
		{"notes/drafts", false},
		{"drafts", true},
		{"x/drafts", true},
		{"notes/sub", true},
		{"foo", false},
		{"foo/bar", true},
		{"build", true},
		{"logs", true},
		{".git", true},
		{"notes/.git", true},
		{".knot", true},
		{".obsidian", true},
		{"obsidian-config", true},
		{"notes/obsidian-config", true},
		{".trash", true},
		{".stversions", true},
		{".stfolder", true},
		{"node_modules", true},
		{"a/node_modules", true},
		{".hidden", true},
		{"notes/.hidden/x", true},
		{"plain", false},
	}
	for _, tt := range tests {
		if got := r.Ignored(tt.path, true); got != tt.want {
			_, why := r.Explain(tt.path + "/")
			t.Errorf("Ignored(%q, dir) = %v; want %v (%s)", tt.path, got, tt.want, why)
		}
	}
	// Dot-files are not dot-directories: whether they matter is the filter's call.
	if r.Ignored(".note.md", false) {
		t.Errorf("Ignored(%q, file) = true; want false", ".note.md")
	}
}

func TestRules_Priority(t *testing.T) {
	r := &Rules{Patterns: []string{"*.draft.md", "private/"}}
	must := func(dir, name, content string) {
		t.Helper()
		if err := r.setFile(dir, name, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	must("", ".gitignore", "*.log.md\n")
	must("", ".ignore", "!a.log.md\n")             // .ignore beats .gitignore
	must("", ".knotignore", "b.md\n!c.draft.md\n") // .knotignore beats both, and the config
	must("sub", ".gitignore", "!*.draft.md\n")     // ignore files beat the config
	tests := []struct {
		path string
		want bool
	}{
		{"x.log.md", true},
		{"a.log.md", false},
		{"b.md", true},
		{"x.draft.md", true},
		{"c.draft.md", false},
		{"sub/x.draft.md", false},
		{"private/x.md", true},
		{"sub/private/x.md", true},
	}
	for _, tt := range tests {
		if got := r.Ignored(tt.path, false); got != tt.want {
			_, why := r.Explain(tt.path)
			t.Errorf("Ignored(%q) = %v; want %v (%s)", tt.path, got, tt.want, why)
		}
	}
	// Removing a file's content removes its patterns.
	must("", ".knotignore", "")
	if r.Ignored("b.md", false) {
		t.Errorf("Ignored(%q) after emptying .knotignore = true; want false", "b.md")
	}
	if err := r.setFile("", "README.md", []byte("x")); err == nil {
		t.Errorf("SetIgnoreFile(README.md) = nil; want an error")
	}
}

func TestRules_Explain(t *testing.T) {
	r := mustRules(t, map[string]string{
		"":      "*.tmp.md\n!keep.tmp.md\n",
		"notes": "# drafts stay private\n\ndrafts/\n",
	})
	r.Patterns = []string{"private/"}
	tests := []struct {
		path    string
		ignored bool
		reason  string
	}{
		{"notes/drafts/x.md", true, `ignored by notes/.gitignore:3 pattern "drafts/" (matches directory notes/drafts)`},
		{"notes/drafts/", true, `ignored by notes/.gitignore:3 pattern "drafts/"`},
		{"notes/drafts", false, "not ignored"}, // a file named drafts: the pattern is for directories
		{"a.tmp.md", true, `ignored by .gitignore:1 pattern "*.tmp.md"`},
		{"keep.tmp.md", false, `not ignored: re-included by .gitignore:2 pattern "!keep.tmp.md"`},
		{".obsidian/", true, "ignored: .obsidian (Obsidian config folder)"},
		{".obsidian/workspace.json", true, "ignored: inside .obsidian (Obsidian config folder)"},
		{".knot/state.db", true, "ignored: inside .knot (knotd's folder)"},
		{".git/HEAD", true, "ignored: inside .git (git repository data)"},
		{"x/.cache/a.md", true, "ignored: inside x/.cache (dot-directory)"},
		{"a/node_modules/b/c.md", true, "ignored: inside a/node_modules (node_modules folder)"},
		{"private/p.md", true, `ignored by knotd config ignore:1 pattern "private/" (matches directory private)`},
		{"notes/a.md", false, "not ignored"},
		{"", false, "not ignored: the vault root"},
		{"../etc/passwd", true, `ignored: not a vault-relative path: strand: invalid vault-relative path "../etc/passwd": has a .. element`},
	}
	for _, tt := range tests {
		ignored, reason := r.Explain(tt.path)
		if ignored != tt.ignored || reason != tt.reason {
			t.Errorf("Explain(%q) = %v, %q; want %v, %q", tt.path, ignored, reason, tt.ignored, tt.reason)
		}
	}
}

// TestRules_AgreesWithGit builds gitFixture on disk and compares what
// Rules.Walk reaches with what git considers ignored.
func TestRules_AgreesWithGit(t *testing.T) {
	git := needGit(t)
	root := t.TempDir()
	for dir, content := range gitFixture {
		mustWrite(t, filepath.Join(root, dir, ".gitignore"), content)
	}
	for p := range gitVerdicts {
		if !strings.HasSuffix(p, ".gitignore") {
			mustWrite(t, filepath.Join(root, filepath.FromSlash(p)), "x\n")
		}
	}
	run := func(args ...string) []string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, stderr.String())
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	run("init", "-q", ".")
	gitIgnored := run("ls-files", "--others", "--ignored", "--exclude-standard")
	gitKept := run("ls-files", "--others", "--exclude-standard")
	for _, p := range gitIgnored {
		if want, ok := gitVerdicts[p]; !ok || !want {
			t.Errorf("git ignores %q; gitVerdicts says %v (listed: %v)", p, want, ok)
		}
	}
	for _, p := range gitKept {
		if want, ok := gitVerdicts[p]; (!ok && p != ".gitignore") || want {
			t.Errorf("git keeps %q; gitVerdicts says ignored=%v (listed: %v)", p, want, ok)
		}
	}

	var walked []string
	r := &Rules{}
	err := r.Walk(root, "", WalkOptions{}, func(rel string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && rel != ".gitignore" {
			walked = append(walked, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Walk: %v", err)
	}
	slices.Sort(gitKept)
	gitKept = slices.DeleteFunc(gitKept, func(s string) bool { return s == ".gitignore" })
	if !slices.Equal(walked, gitKept) {
		t.Errorf("Walk reached\n%q\ngit keeps\n%q", walked, gitKept)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
