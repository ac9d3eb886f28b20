package vault

import (
	"os"
	"strings"
	"testing"
)

// TestExplainPath: --explain-ignore says whether knotd ignores a path and
// why: the built-in ignores, the ignore files, the configured patterns,
// and whether the name is a strand at all.
func TestExplainPath(t *testing.T) {
	e := newEnv(t)
	e.userConfig("ignore: [\"private/**\"]\n")
	e.write(".knotignore", "drafts/\n*.secret.md\n")
	e.write("notes/a.md", "# A\n")
	e.write("drafts/x.md", "# X\n")
	e.write(".knot/config.yaml", "")
	e.write("inner/.knot/config.yaml", "")
	symlink := os.Symlink("a.md", e.abs("notes/link.md")) == nil
	tests := []struct {
		rel, want string
	}{
		{"notes/a.md", "notes/a.md: not ignored; it is a note"},
		{"notes/new.md", "notes/new.md: not ignored; it is a note"},
		{"drafts/x.md", `drafts/x.md: ignored by .knotignore:1 pattern "drafts/"`},
		{"notes/b.secret.md", `notes/b.secret.md: ignored by .knotignore:2 pattern "*.secret.md"`},
		{"private/diary.md", `private/diary.md: ignored by knotd config ignore:1 pattern "private/**"`},
		{".obsidian/workspace.md", ".obsidian/workspace.md: ignored: inside .obsidian"},
		{".git/x.md", ".git/x.md: ignored"},
		{"node_modules/pkg/readme.md", "node_modules/pkg/readme.md: ignored"},
		{"notes/a.tieoff.md", "notes/a.tieoff.md: not ignored; it is a tie-off (knotd's output), never a note"},
		{"notes/a.txt", "notes/a.txt: not ignored; but it is not a note"},
		{"notes/.#a.md", "notes/.#a.md: not ignored; but it is not a note"},
		{"notes/", "notes: not ignored"},
		{"inner/n.md", "inner/n.md: inside inner, a folder with a .knot of its own: a vault of its own"},
		{"", "the vault root is never ignored"},
	}
	if symlink {
		tests = append(tests, struct{ rel, want string }{"notes/link.md", "notes/link.md: not ignored; but it is not a regular file"})
	}
	for _, tt := range tests {
		got, err := ExplainPath(e.root, e.options(), tt.rel)
		if err != nil || !strings.HasPrefix(got, tt.want) {
			t.Errorf("ExplainPath(%q) = %q, %v; want %q...", tt.rel, got, err, tt.want)
		}
	}
	for _, bad := range []string{"../outside.md", "/etc/passwd", "a/../../b.md"} {
		if got, err := ExplainPath(e.root, e.options(), bad); err == nil {
			t.Errorf("ExplainPath(%q) = %q; want an error for a path outside the vault", bad, got)
		}
	}
}
