package ignore

import (
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The differential tests below ask git itself (git check-ignore) about
// the same .gitignore files and paths as Rules, and compare. They cover
// the syntax knotd shares with .gitignore: "!" negation, "/" anchoring,
// "*", "?", "**", a trailing "/", character classes ("[a-c]", "[!a]",
// "[^a]"), backslash escapes, trailing spaces, comments and nested ignore
// files. What knotd deliberately does differently is kept out of the
// generated input or mapped explicitly, one by one (see gitWant):
//
//   - every dot-directory is ignored (built in): a path with a directory
//     element starting with "." is ignored whatever git says;
//   - node_modules and Obsidian's config folder are ignored by name: the
//     names cannot be generated;
//   - paths strand.ValidateRel rejects (a backslash, a volume name such
//     as "c:", "." or ".." elements) are ignored: they are not generated;
//   - matching is case-sensitive while git follows core.ignorecase: the
//     names are lowercase, and git runs with core.ignorecase=false;
//   - "?" and classes match characters, git bytes: the input is ASCII;
//   - .git/info/exclude and core.excludesFile are not read: the test
//     repository has neither, and git runs without global or system
//     configuration.
//
// Tie-offs and editor or sync artefacts are no concern of Rules (strand
// decides that a tie-off is never a note), nor are .ignore and
// .knotignore files, which git does not read: only .gitignore is used.

// gitCase is one comparison: the vault root's .gitignore, the .gitignore
// of the folder "a", and the paths asked about (files; the folders above
// them are asked about as folders).
type gitCase struct {
	root, nested string
	paths        []string
}

// needGit returns the path of git, or skips the test, saying why.
func needGit(t testing.TB) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("SKIP: the differential ignore tests make file names Windows cannot hold (trailing spaces, '*'); they run on Linux and macOS")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("SKIP: git is not on PATH; the ignore rules are not compared with git check-ignore")
	}
	return git
}

// gitWant maps git's verdict for rel to knotd's where knotd differs on
// purpose: a dot-directory anywhere on the way is ignored.
func gitWant(gitIgnored bool, rel string, isDir bool) bool {
	elems := strings.Split(rel, "/")
	if !isDir {
		elems = elems[:len(elems)-1]
	}
	for _, e := range elems {
		if strings.HasPrefix(e, ".") {
			return true
		}
	}
	return gitIgnored
}

// compareWithGit lays c out in a fresh repository under t.TempDir, asks
// git check-ignore (one process, every path on its standard input) and
// reports where Rules answers differently.
func compareWithGit(t testing.TB, git string, c gitCase) {
	t.Helper()
	root := t.TempDir()
	// A repository needs no more than this for check-ignore; no git init,
	// so no template's info/exclude either.
	for _, d := range []string{".git/objects", ".git/refs", "a"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(root, ".git", "HEAD"), "ref: refs/heads/main\n")
	writeFile(t, filepath.Join(root, ".gitignore"), c.root)
	writeFile(t, filepath.Join(root, "a", ".gitignore"), c.nested)

	dirs := map[string]bool{"a": true}
	for _, p := range c.paths {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var asked []string
	isDir := map[string]bool{}
	for d := range dirs {
		asked = append(asked, d)
		isDir[d] = true
		if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range c.paths {
		if dirs[p] || isDir[p] || p == ".gitignore" || p == "a/.gitignore" {
			continue // a folder already, or an ignore file
		}
		isDir[p] = false
		asked = append(asked, p)
		writeFile(t, filepath.Join(root, filepath.FromSlash(p)), "")
	}
	slices.Sort(asked)

	var in bytes.Buffer
	for _, p := range asked {
		in.WriteString(p)
		in.WriteByte(0)
	}
	home := t.TempDir()
	cmd := exec.Command(git, "-c", "core.ignorecase=false", "-c", "core.excludesFile=",
		"check-ignore", "--no-index", "--verbose", "--non-matching", "-z", "--stdin")
	cmd.Dir = root
	cmd.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = &in
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run() // exit status 1: nothing is ignored
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Fatalf("git check-ignore: %v: %s", err, stderr.String())
	}
	// Four NUL-terminated fields a path: source, line, pattern, path.
	fields := strings.Split(stdout.String(), "\x00")
	if len(fields) != 4*len(asked)+1 {
		t.Fatalf("git check-ignore answered %d fields for %d paths: %q", len(fields)-1, len(asked), stdout.String())
	}

	r := &Rules{}
	if err := r.setFile("", ".gitignore", []byte(c.root)); err != nil {
		t.Fatal(err)
	}
	if err := r.setFile("a", ".gitignore", []byte(c.nested)); err != nil {
		t.Fatal(err)
	}
	for i, p := range asked {
		src, line, pat, got := fields[4*i], fields[4*i+1], fields[4*i+2], fields[4*i+3]
		if got != p {
			t.Fatalf("git check-ignore answered about %q; asked %q", got, p)
		}
		gitIgnored := pat != "" && !strings.HasPrefix(pat, "!")
		want := gitWant(gitIgnored, p, isDir[p])
		if ign := r.Ignored(p, isDir[p]); ign != want {
			q := p
			if isDir[p] {
				q += "/"
			}
			_, why := r.Explain(q)
			t.Errorf("Ignored(%q, dir=%v) = %v; git says ignored=%v (%s:%s %q)\nknotd: %s\nroot .gitignore: %q\na/.gitignore: %q",
				p, isDir[p], ign, gitIgnored, src, line, pat, why, c.root, c.nested)
		}
	}
}

func writeFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitPaths are the paths TestRules_MatchesGitCheckIgnore asks about.
var gitPaths = []string{
	"x.md", "a/x.md", "a/b/x.md", "b/x.md", "b/a/x.md", "c/b/a/x.md",
	"a/b/c/d.md", "ab.md", "ba.md", "b/ab", "abc", "a/abc", "b/c",
	"foo/keep.md", "foo/x.md", "foo/bar/keep.md", "foo", "logs/l.md", "x/logs/l.md",
	"#hash.md", "!bang.md", "sp ace.md", "trail.md", "trail.md ", "star*.md", "q?.md",
	"[ab].md", "a.1.md", "a.b.md", "-.md", "^.md", "]", "x]y.md",
	".hidden.md", "a/.hidden.md", "notes/.git-like/x.md",
}

// gitCases are the ignore files TestRules_MatchesGitCheckIgnore tries,
// and seeds for FuzzRules_MatchesGit where its tokens can spell them.
var gitCases = []struct {
	name         string
	root, nested string
}{
	{"gitFixture", gitFixture[""], ""},
	{"negation", "*.md\n!x.md\n", ""},
	{"negate-dir-then-file", "b/\n!b/x.md\n", ""},
	{"double-star-start", "**/x.md\n", ""},
	{"double-star-middle", "a/**/d.md\n", ""},
	{"double-star-end", "foo/**\n!foo/keep.md\n", ""},
	{"double-star-alone", "**\n", ""},
	{"double-star-slash", "**/\n", ""},
	{"double-star-in-name", "a**.md\n**x.md\n", ""},
	{"triple-star", "***\n", ""},
	{"slash-double-star-slash", "a/**/\n", ""},
	{"anchored", "/x.md\n/b\n", ""},
	{"middle-slash", "b/x.md\n", ""},
	{"dir-only", "b/\nabc/\n", ""},
	{"dir-only-glob", "*/\n!a/\n", ""},
	{"question", "q?.md\n?\n", ""},
	{"classes", "[ab].md\n[!a]b.md\n[^x]y.md\n[a-c]bc\n[]]\n", ""},
	{"class-edge", "[a-]*.md\n[-a].md\n[!-].md\n[\\]]\n", ""},
	{"class-unclosed", "[ab\nx[\n", ""},
	{"posix-class", "a.[[:digit:]].md\n[[:alpha:]]b.md\n[[:bogus:]].md\n", ""},
	{"escapes", "\\#hash.md\n\\!bang.md\nstar\\*.md\nq\\?.md\n\\[ab\\].md\n", ""},
	{"trailing-backslash", "abc\\\n", ""},
	{"trailing-spaces", "trail.md   \nsp\\ ace.md\n", ""},
	{"escaped-trailing-space", "trail.md\\ \n", ""},
	{"comment-and-blank", "# x.md\n\n   \n!\n/\n", ""},
	{"crlf", "x.md\r\nab.md\r\n", ""},
	{"bom", "\xef\xbb\xbfx.md\n", ""},
	{"nested-negation", "*.md\n", "!x.md\n"},
	{"nested-anchored", "", "/x.md\nb/\n"},
	{"nested-cannot-reinclude", "a/b/\n", "!b/x.md\n"},
	{"nested-double-star", "", "**/d.md\n"},
	{"later-line-wins", "x.md\n!x.md\nx.md\n", ""},
	{"negated-dir-only", "*\n!*/\n!*.md\n", ""},
	{"dot-files", ".*\n!.hidden.md\n", ""},
	{"slash-only-negation", "!/x.md\n", ""},
}

// TestRules_MatchesGitCheckIgnore compares Rules with git check-ignore on
// cases chosen for where gitignore implementations tend to differ.
func TestRules_MatchesGitCheckIgnore(t *testing.T) {
	git := needGit(t)
	for _, c := range gitCases {
		t.Run(c.name, func(t *testing.T) {
			compareWithGit(t, git, gitCase{root: c.root, nested: c.nested, paths: gitPaths})
		})
	}
}

// patternTokens and nameTokens are what FuzzRules_MatchesGit builds its
// ignore files and paths from: each input byte picks one. Names are
// lowercase ASCII (see the differences above); "/" and "\n" separate
// elements and lines.
var (
	patternTokens = []string{"\n", "a", "b", "c", "*", "**", "?", "/", "!", "[ab]", "[!a]", "[a-c]", "[",
		"]", "-", "^", "\\", " ", "#", ".md", ".", "[[:alpha:]]", "\r", "x"}
	nameTokens = []string{"\n", "/", "a", "b", "c", "ab", ".md", ".", " ", "#", "!", "[", "]", "-", "^", "*", "?", "x"}
)

// decode turns input bytes into text, one token a byte, at most max bytes.
func decode(data string, tokens []string, max int) string {
	var b strings.Builder
	for i := 0; i < len(data) && i < max; i++ {
		b.WriteString(tokens[int(data[i])%len(tokens)])
	}
	return b.String()
}

// fuzzPaths splits decoded names into paths of at most four elements,
// leaving out those strand.ValidateRel would reject (knotd ignores them).
func fuzzPaths(s string) []string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		var elems []string
		for e := range strings.SplitSeq(line, "/") {
			if e != "" && len(elems) < 4 {
				elems = append(elems, e)
			}
		}
		p := strings.Join(elems, "/")
		if p == "" || slices.ContainsFunc(elems, func(e string) bool { return e == "." || e == ".." || e == ".git" }) {
			continue
		}
		out = append(out, p)
		if len(out) == 16 {
			break
		}
	}
	return out
}

// FuzzRules_MatchesGit generates .gitignore files (the vault root's and the
// folder a's) and paths, and compares Rules with git check-ignore.
func FuzzRules_MatchesGit(f *testing.F) {
	// enc is decode's inverse for seeds: the longest token first.
	enc := func(s string, tokens []string) (string, bool) {
		var b []byte
		for s != "" {
			best := -1
			for i, tok := range tokens {
				if strings.HasPrefix(s, tok) && (best < 0 || len(tok) > len(tokens[best])) {
					best = i
				}
			}
			if best < 0 {
				return "", false
			}
			b = append(b, byte(best))
			s = s[len(tokens[best]):]
		}
		return string(b), true
	}
	var names []string
	for _, p := range gitPaths {
		if _, ok := enc(p, nameTokens); ok {
			names = append(names, p)
		}
	}
	allNames, _ := enc(strings.Join(names, "\n"), nameTokens)
	for _, c := range gitCases {
		root, ok1 := enc(c.root, patternTokens)
		nested, ok2 := enc(c.nested, patternTokens)
		if ok1 && ok2 {
			f.Add(root, nested, allNames)
		}
	}
	must := func(s string, ok bool) string {
		if !ok {
			panic("a seed the tokens cannot spell")
		}
		return s
	}
	f.Add(must(enc("*.md\n!a\n", patternTokens)), must(enc("!x.md\n", patternTokens)), must(enc("a/x.md\nb/a/x.md\nc\n", nameTokens)))
	f.Add(must(enc("a/**/b\n", patternTokens)), must(enc("b/\n", patternTokens)), must(enc("a/c/b/x.md\na/b/b/x\n", nameTokens)))
	f.Add(must(enc("[!a]b\n\\#x\n", patternTokens)), "", must(enc("bb\n#x\nab\n", nameTokens)))
	git := needGit(f)
	f.Fuzz(func(t *testing.T, root, nested, names string) {
		compareWithGit(t, git, gitCase{
			root:   decode(root, patternTokens, 64),
			nested: decode(nested, patternTokens, 32),
			paths:  fuzzPaths(decode(names, nameTokens, 96)),
		})
	})
}
