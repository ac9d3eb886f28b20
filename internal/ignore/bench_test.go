package ignore

import "testing"

// benchRules is a vault with a typical root .gitignore and a nested one.
func benchRules(b *testing.B) *Rules {
	r := &Rules{Patterns: []string{"*.tmp.md", "scratch/"}}
	root := `# build output
/public/
/resources/_gen/
*.log
*.swp
*~
.DS_Store
Thumbs.db
**/drafts/
archive/**
!archive/index.md
/private/
*.excalidraw.md
attachments/*.pdf
`
	if err := r.setFile("", ".gitignore", []byte(root)); err != nil {
		b.Fatal(err)
	}
	if err := r.setFile("projects/knot", ".gitignore", []byte("notes/old-*.md\n!notes/old-keep.md\n")); err != nil {
		b.Fatal(err)
	}
	return r
}

var benchPaths = []string{
	"inbox.md",
	"daily/2026/11/2026-11-21.md",
	"projects/knot/notes/design.md",
	"projects/knot/notes/old-plan.md",
	"archive/2019/notes.md",
	"research/papers/attention/summary.md",
	"private/journal/entry.md",
	"people/ada.md",
}

// BenchmarkRules_Ignored measures one decision for a path of typical
// depth. "builtin" (no ignore files) is the baseline for the others.
func BenchmarkRules_Ignored(b *testing.B) {
	cases := []struct {
		name     string
		rules    *Rules
		lastOnly bool
	}{
		{"builtin", &Rules{}, false},
		{"gitignore", benchRules(b), false},
		{"gitignore-walk-entry", benchRules(b), true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				p := benchPaths[i%len(benchPaths)]
				if c.lastOnly {
					c.rules.ignoredEntry(p, false)
				} else {
					c.rules.Ignored(p, false)
				}
			}
		})
	}
}
