// Package vaultgen writes the bench's synthetic vaults: nested
// directories of 1–4 KiB Markdown notes with frontmatter, headings, tasks
// and links, deterministic for a seed.
package vaultgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// notesPerDir is how many strands share a leaf directory of a synthetic
// vault: a 100,000-strand vault has 10,000 leaf directories.
const notesPerDir = 10

// layout returns the vault-relative paths of the n strands of a synthetic
// vault, in creation order: area-AAA/topic-TTT/note-NNNNNN.md, ten to a
// leaf directory, with about as many areas as topics per area.
func layout(n int) []string {
	leaves := (n + notesPerDir - 1) / notesPerDir
	top := max(1, int(math.Ceil(math.Sqrt(float64(leaves)))))
	rels := make([]string, n)
	for i := range rels {
		leaf := i / notesPerDir
		rels[i] = fmt.Sprintf("area-%03d/topic-%03d/note-%06d.md", leaf/top, leaf%top, i)
	}
	return rels
}

// DirsOf counts the distinct directories (the root excluded) that hold
// rels.
func DirsOf(rels []string) int {
	seen := map[string]bool{}
	for _, r := range rels {
		for d := filepath.Dir(r); d != "."; d = filepath.Dir(d) {
			if seen[d] {
				break
			}
			seen[d] = true
		}
	}
	return len(seen)
}

// Generate writes a synthetic vault of n strands under root (which must
// not exist yet) and returns the strands' relative paths. The content is
// a deterministic function of seed and the strand's number: YAML
// frontmatter, headings, paragraphs, tasks, wiki links and Markdown links
// to other strands, between 1 and about 4 KiB. An Obsidian config folder
// is added, which knotd ignores.
func Generate(root string, n int, seed uint64) ([]string, error) {
	rels := layout(n)
	if err := os.Mkdir(root, 0o755); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	obsidian := filepath.Join(root, ".obsidian")
	if err := os.Mkdir(obsidian, 0o755); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	for name, body := range map[string]string{
		"app.json":       `{"alwaysUpdateLinks":true}` + "\n",
		"workspace.json": `{"main":{"id":"a1","type":"split","children":[]}}` + "\n",
	} {
		if err := os.WriteFile(filepath.Join(obsidian, name), []byte(body), 0o644); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
	}
	// The notes look an hour old, as a vault's notes do: a stamp younger
	// than knotd's racy window (2 s) is not trusted, so notes written the
	// instant before would be read and hashed again at the next passes,
	// and the start-up figures of small vaults would measure that.
	old := time.Now().Add(-time.Hour)
	made := map[string]bool{}
	for i, rel := range rels {
		abs := filepath.Join(root, filepath.FromSlash(rel))
		if dir := filepath.Dir(abs); !made[dir] {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("generate: %w", err)
			}
			made[dir] = true
		}
		if err := os.WriteFile(abs, NoteContent(seed, i, rels), 0o644); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		if err := os.Chtimes(abs, old, old); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
	}
	return rels, nil
}

var lexicon = strings.Fields(`the a of to and in that is for on with as it at by from this
be are or an was we can will not have more about which their one all would there what so
when up out if into has them other time some could these two may then do first any like
now my such our over new me its also back after use how work well way even because good
those people through most day too very just where only think know take year see come
draft plan review meeting garden project idea budget notes reading list sprint agent
summary question answer deadline follow migrate refactor design schedule release backup
invoice travel recipe workout journal habit research paper chapter outline metric goal`)

// NoteContent returns strand i's content: between 1 KiB and about 4 KiB.
func NoteContent(seed uint64, i int, rels []string) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	target := 1024 + r.IntN(3*1024)
	word := func() string { return lexicon[r.IntN(len(lexicon))] }
	words := func(k int) string {
		ws := make([]string, k)
		for j := range ws {
			ws[j] = word()
		}
		return strings.Join(ws, " ")
	}
	link := func() string {
		j := r.IntN(len(rels))
		if r.IntN(2) == 0 {
			return fmt.Sprintf("[[note-%06d]]", j)
		}
		return fmt.Sprintf("[%s](/%s)", word(), rels[j])
	}
	var b strings.Builder
	title := fmt.Sprintf("%s %s %d", word(), word(), i)
	fmt.Fprintf(&b, "---\ntitle: %s\ntags: [%s, %s]\ncreated: 2025-%02d-%02d\naliases: []\n---\n", title, word(), word(), 1+r.IntN(12), 1+r.IntN(28))
	fmt.Fprintf(&b, "# %s\n\n%s %s.\n", title, words(12+r.IntN(20)), link())
	for section := 1; b.Len() < target; section++ {
		fmt.Fprintf(&b, "\n## %s %d\n\n", strings.ToUpper(word()[:1])+words(2)[1:], section)
		switch r.IntN(3) {
		case 0:
			for range 2 + r.IntN(4) {
				box := " "
				if r.IntN(3) == 0 {
					box = "x"
				}
				fmt.Fprintf(&b, "- [%s] %s\n", box, words(4+r.IntN(8)))
			}
		case 1:
			fmt.Fprintf(&b, "%s, see %s. %s.\n", words(20+r.IntN(40)), link(), words(10+r.IntN(20)))
		default:
			fmt.Fprintf(&b, "- %s\n- %s %s\n", words(6+r.IntN(6)), words(3), link())
		}
	}
	return []byte(b.String())
}
