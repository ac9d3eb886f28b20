package vaultgen

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/strand"
)

func TestLayout(t *testing.T) {
	tests := []struct {
		n, wantDirs int
		wantLast    string
	}{
		{1, 2, "area-000/topic-000/note-000000.md"},
		{25, 5, "area-001/topic-000/note-000024.md"},     // 3 leaves, 2 per area: 2 areas + 3 leaves
		{1000, 110, "area-009/topic-009/note-000999.md"}, // 100 leaves, 10 areas
		{100000, 10100, "area-099/topic-099/note-099999.md"},
	}
	for _, tt := range tests {
		rels := layout(tt.n)
		if len(rels) != tt.n || rels[len(rels)-1] != tt.wantLast {
			t.Errorf("layout(%d): %d paths, last %q; want %d, %q", tt.n, len(rels), rels[len(rels)-1], tt.n, tt.wantLast)
		}
		if got := DirsOf(rels); got != tt.wantDirs {
			t.Errorf("DirsOf(layout(%d)) = %d; want %d", tt.n, got, tt.wantDirs)
		}
		seen := map[string]bool{}
		for _, r := range rels {
			if seen[r] || !strand.IsStrandPath(r) {
				t.Fatalf("layout(%d): %q repeated or not a strand path", tt.n, r)
			}
			seen[r] = true
		}
	}
}

func TestNoteContent(t *testing.T) {
	rels := layout(500)
	total := 0
	for i := range rels {
		c := NoteContent(1, i, rels)
		if len(c) < 1024 || len(c) > 5*1024 {
			t.Fatalf("NoteContent(1, %d) is %d bytes; want 1–5 KiB", i, len(c))
		}
		doc, err := frontmatter.Parse(c)
		if err != nil {
			t.Fatalf("NoteContent(1, %d): frontmatter: %v", i, err)
		}
		if doc.Fields.Session != "" {
			t.Fatalf("NoteContent(1, %d) has a knot_session", i)
		}
		for _, want := range []string{"\n# ", "\n## ", "title: "} {
			if !bytes.Contains(c, []byte(want)) {
				t.Fatalf("NoteContent(1, %d) lacks %q:\n%s", i, want, c)
			}
		}
		total += len(c)
	}
	if !bytes.Equal(NoteContent(1, 7, rels), NoteContent(1, 7, rels)) {
		t.Error("noteContent is not deterministic")
	}
	if bytes.Equal(NoteContent(1, 7, rels), NoteContent(2, 7, rels)) {
		t.Error("noteContent ignores the seed")
	}
	if avg := total / len(rels); avg < 2000 || avg > 3500 {
		t.Errorf("average note size %d bytes; want about 2.5 KiB", avg)
	}
}

func TestGenerate(t *testing.T) {
	root := filepath.Join(t.TempDir(), "vault")
	rels, err := Generate(root, 30, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".md") {
			n++
			info, err := d.Info()
			if err != nil {
				return err
			}
			if age := time.Since(info.ModTime()); age < 30*time.Minute {
				t.Errorf("%s was modified %v ago; want notes that look old (outside knotd's racy window)", p, age)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 30 || len(rels) != 30 {
		t.Errorf("Generate(30) wrote %d notes and returned %d paths; want 30", n, len(rels))
	}
	if _, err := os.Stat(filepath.Join(root, ".obsidian", "app.json")); err != nil {
		t.Errorf("generate: no Obsidian folder: %v", err)
	}
	if _, err := Generate(root, 1, 1); err == nil {
		t.Error("generate into an existing directory succeeded; want an error")
	}
}
