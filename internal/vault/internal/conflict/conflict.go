// Package conflict is what knotd knows of sync tools' conflict copies
// without touching the vault: which paths are copies (IsCopy), the note a
// copy was made of (OriginalOf), what becomes of a copy of a note (Judge),
// and the copies a reconcile found, waiting for their strand's next
// processing (Copies). The vault's reconciler (package
// vault/internal/reconcile) reads, folds, merges and removes them.
package conflict

import (
	"bytes"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
)

// IsCopy reports whether rel is a sync tool's conflict copy of a
// file in the vault (outside knotd's own folder).
func IsCopy(rel string) bool {
	return strand.ValidateRel(rel) == nil && !strand.IsStrandPath(rel) &&
		!strand.Within(rel, strand.StateDir) && strand.IsConflictCopy(path.Base(rel))
}

// Watched is what knotd looks for in a vault: strands and conflict
// copies.
func Watched(rel string) bool { return strand.IsStrandPath(rel) || IsCopy(rel) }

// Copies are the conflict copies of tie-offs and notes reconcile found,
// by strand, waiting for the strand's next processing to merge them.
type Copies struct {
	mu   sync.Mutex
	tie  map[string][]string // strand -> its tie-off's copies
	note map[string][]string // strand -> its own copies
}

func (c *Copies) Add(rel, copy string) { c.addTo(&c.tie, rel, copy) }

func (c *Copies) AddNote(rel, copy string) { c.addTo(&c.note, rel, copy) }

func (c *Copies) addTo(m *map[string][]string, rel, copy string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string][]string{}
	}
	if !slices.Contains((*m)[rel], copy) {
		(*m)[rel] = append((*m)[rel], copy)
	}
}

func (c *Copies) Take(rel string) []string { return c.takeFrom(c.tie, rel) }

func (c *Copies) TakeNotes(rel string) []string { return c.takeFrom(c.note, rel) }

// Pending reports whether conflict copies of the strand rel's tie-off or
// note wait for its next processing.
func (c *Copies) Pending(rel string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.tie[rel]) > 0 || len(c.note[rel]) > 0
}

func (c *Copies) takeFrom(m map[string][]string, rel string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := m[rel]
	delete(m, rel)
	return cs
}

// How a conflict copy of a note was dealt with (see Judge; the vault's
// reconciler folds and removes copies).
const (
	NoFold   = iota // left to the user
	Folded          // its content went back into the note
	Removed         // it held nothing the note lacks
	OwnWrite        // it was knotd's own write of the note, and is removed
)

// Judge decides what becomes of cp, a conflict copy of a note
// that holds note, knowing the hashes of the versions of the note that
// knotd wrote (wrote): OwnWrite when cp is exactly one of them (knotd's
// write of the note's knot_session, which a newer save replaced: it holds
// only what the user had saved before, and the agent saw), Removed when
// it holds nothing the note lacks, knotd's keys aside (every line of it
// is in the note, in the same order: a line the note lacks, or lines in
// another order, keep it), and NoFold otherwise.
func Judge(note, cp []byte, wrote []state.Hash) int {
	if slices.Contains(wrote, state.HashOf(cp)) {
		return OwnWrite
	}
	if LinesWithin(frontmatter.WithoutOwnKeys(cp), frontmatter.WithoutOwnKeys(note)) {
		return Removed
	}
	return NoFold
}

// LinesWithin reports whether every line of a is in b, in the same order
// (b may have more lines anywhere).
func LinesWithin(a, b []byte) bool {
	rest := b
	for line := range bytes.Lines(a) {
		for {
			if len(rest) == 0 {
				return false
			}
			i := bytes.IndexByte(rest, '\n')
			next := rest
			if i >= 0 {
				next = rest[:i+1]
			}
			rest = rest[len(next):]
			if bytes.Equal(bytes.TrimRight(next, "\r\n"), bytes.TrimRight(line, "\r\n")) {
				break
			}
		}
	}
	return true
}

// OriginalOf guesses the note a conflict copy was made of, for messages.
func OriginalOf(c string) string {
	dir, base := path.Split(c)
	ext := path.Ext(base)
	stem := base[:len(base)-len(ext)]
	if i := strings.LastIndex(stem, ".sync-conflict-"); i >= 0 {
		return dir + stem[:i] + ext
	}
	if i := strings.LastIndex(stem, " ("); i >= 0 {
		return dir + stem[:i] + ext
	}
	return c
}
