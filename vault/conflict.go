package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/knotd/knotd/frontmatter"
	"github.com/knotd/knotd/internal/vaultfs"
	"github.com/knotd/knotd/state"
	"github.com/knotd/knotd/strand"
	"github.com/knotd/knotd/tieoff"
)

// Sync tools make a conflict copy of a file that two devices changed
// before they synced (Syncthing's "x.sync-conflict-….md", Dropbox's and
// Nextcloud's "x (conflicted copy ….md"). knotd looks for them like for
// strands (the watcher's hints, every walk):
//
//   - a copy of a tie-off is merged into the tie-off by run id, each
//     section once, in order, by the answering device, while it holds the
//     strand (so no run appends meanwhile); the copy is removed once the
//     merge is durable, and only if everything in it found its place;
//   - a copy of a note is never a strand. When knotd's own write of the
//     note's knot_session made it (the other device's save met that write,
//     and lost because it was older) and the copy holds every line of the
//     note, knotd folds it back: the note gets the copy's content with
//     its knot_session, the copy is removed, and the note runs on what the
//     other device saved. Any other copy knotd says once (the notice is
//     kept in the state, so a restart does not say it again) and leaves
//     to the user.

// isConflictPath reports whether rel is a sync tool's conflict copy of a
// file in the vault (outside knotd's own folder).
func isConflictPath(rel string) bool {
	return strand.ValidateRel(rel) == nil && !strand.IsStrandPath(rel) &&
		!strand.Within(rel, strand.StateDir) && strand.IsConflictCopy(path.Base(rel))
}

// isWatched is what knotd looks for in a vault: strands and conflict
// copies.
func isWatched(rel string) bool { return strand.IsStrandPath(rel) || isConflictPath(rel) }

// copies are the conflict copies of tie-offs and notes reconcile found,
// by strand, waiting for the strand's next processing to merge them.
type copies struct {
	mu   sync.Mutex
	tie  map[string][]string // strand -> its tie-off's copies
	note map[string][]string // strand -> its own copies
}

func (c *copies) add(rel, copy string) { c.addTo(&c.tie, rel, copy) }

func (c *copies) addNote(rel, copy string) { c.addTo(&c.note, rel, copy) }

func (c *copies) addTo(m *map[string][]string, rel, copy string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string][]string{}
	}
	if !slices.Contains((*m)[rel], copy) {
		(*m)[rel] = append((*m)[rel], copy)
	}
}

func (c *copies) take(rel string) []string { return c.takeFrom(c.tie, rel) }

func (c *copies) takeNotes(rel string) []string { return c.takeFrom(c.note, rel) }

func (c *copies) takeFrom(m map[string][]string, rel string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := m[rel]
	delete(m, rel)
	return cs
}

// sawCopies handles the conflict copies a reconcile pass found: it returns
// the strands whose tie-off or note has a copy to merge (their processing
// merges it), and says once each note copy that belongs to no strand.
func (v *Vault) sawCopies(found []string) (strands []string) {
	for _, c := range found {
		if info, where, err := v.lstatStrand(c); err != nil || where != present || info == nil {
			continue // gone already, or not a regular file
		}
		if orig, ok := tieoff.ConflictOf(c); ok {
			if rel, ok := strand.StrandPath(orig); ok {
				if !v.dry {
					v.copies.add(rel, c)
				}
				strands = append(strands, rel)
				continue
			}
		}
		if orig := originalOf(c); orig != c && strand.IsStrandPath(orig) && !v.dry {
			v.copies.addNote(orig, c)
			strands = append(strands, orig)
			continue
		}
		v.sayNoteCopy(c)
	}
	return strands
}

// sayNoteCopy says, once, that the conflict copy c of a note is left to
// the user.
func (v *Vault) sayNoteCopy(c string) {
	v.noticeOnce("conflict:"+c, func() {
		v.log.Warn("a sync tool made a conflict copy of a note: knotd does not run it; compare it with the note, keep what you want, then delete the copy",
			"copy", c, "note", originalOf(c))
	})
}

// foldNoteCopies folds back the conflict copies of the strand rel's note
// that reconcile found, where that loses nothing (see foldNoteCopy), and
// says the others once; the caller holds the strand.
func (v *Vault) foldNoteCopies(rel string) {
	for _, c := range v.copies.takeNotes(rel) {
		how, err := v.foldNoteCopy(rel, c)
		switch {
		case err != nil:
			v.log.Error("cannot fold a sync tool's conflict copy of a note back into it", "strand", rel, "copy", c, "err", err)
			v.sayNoteCopy(c)
		case how == noFold:
			v.sayNoteCopy(c)
		case how == folded:
			v.log.Info("a save from another device met knotd's write of the note's knot_session, and the sync tool kept it in a conflict copy: knotd put it back into the note and removed the copy",
				"strand", rel, "copy", c)
		default:
			v.log.Info("removed a sync tool's conflict copy of a note that holds what the note holds (knotd's keys aside)", "strand", rel, "copy", c)
		}
	}
}

// How foldNoteCopy dealt with a conflict copy.
const (
	noFold  = iota // left to the user
	folded         // its content went back into the note
	removed        // it held what the note holds
)

// foldNoteCopy folds the conflict copy c back into the strand rel's note
// when knotd's write of its knot_session made the copy: the note is
// exactly the version knotd last processed, which holds the session knotd
// keeps for it (knotd wrote it there), and the copy, knotd's keys aside,
// holds every line of the note in the same order (the other device only
// added to what knotd wrote over). The note then gets the copy's content
// with its knot_session, and the copy is removed. A copy that holds what
// the note holds, knotd's keys aside, is removed. Any other copy is left
// as it is (noFold).
func (v *Vault) foldNoteCopy(rel, c string) (int, error) {
	note, _, _, tooBig, err := v.readStrand(rel, v.config().MaxStrandSize)
	if errors.Is(err, fs.ErrNotExist) || tooBig {
		return noFold, nil
	}
	if err != nil {
		return noFold, err
	}
	cp, _, err := vaultfs.ReadFile(v.fs, filepath.FromSlash(c), v.config().MaxStrandSize)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, vaultfs.ErrTooLarge) {
		return noFold, nil
	}
	if err != nil {
		return noFold, err
	}
	mine, theirs := frontmatter.WithoutOwnKeys(note), frontmatter.WithoutOwnKeys(cp)
	if bytes.Equal(mine, theirs) {
		return removed, v.removeCopy(c)
	}
	rec, has, err := v.store.Get(rel)
	if err != nil || !has || rec.Session == "" {
		return noFold, err
	}
	processed, ok, err := v.store.Content(rel)
	if err != nil || !ok || !bytes.Equal(note, processed) {
		return noFold, err
	}
	if doc, err := frontmatter.Parse(note); err != nil || doc.Fields.Session != rec.Session {
		return noFold, nil
	}
	if doc, err := frontmatter.Parse(cp); err != nil || (doc.Fields.Session != "" && doc.Fields.Session != rec.Session) {
		return noFold, nil
	}
	if !linesWithin(mine, theirs) {
		return noFold, nil
	}
	updated, err := frontmatter.SetSession(cp, rec.Session)
	if err != nil {
		return noFold, nil
	}
	g, err := frontmatter.WriteFile(v.fs, rel, note, updated)
	v.settleGuard(rel, g) // a save that raced the write is put back, or kept
	if errors.Is(err, vaultfs.ErrChanged) {
		return noFold, nil // saved meanwhile: the copy stays, for the user
	}
	if err != nil {
		return noFold, err
	}
	return folded, v.removeCopy(c)
}

// removeCopy removes the conflict copy c, whose content is in its note.
func (v *Vault) removeCopy(c string) error {
	if err := v.fs.Remove(filepath.FromSlash(c)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("the copy's content is in the note, but the copy cannot be removed: %w", err)
	}
	return nil
}

// linesWithin reports whether every line of a is in b, in the same order
// (b may have more lines anywhere).
func linesWithin(a, b []byte) bool {
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

// originalOf guesses the note a conflict copy was made of, for messages.
func originalOf(c string) string {
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

// noticeOnce calls say unless the notice key was given before, in this
// process or (kept in the state) in an earlier one.
func (v *Vault) noticeOnce(key string, say func()) {
	if v.dry {
		v.warnOnceFunc(key, say)
		return
	}
	var isNew bool
	err := v.store.Update(func(tx *state.Tx) (err error) {
		isNew, err = tx.Notice(key, v.now().UTC())
		return err
	})
	if err != nil {
		v.warnOnceFunc(key, say) // still said, once in this process
		return
	}
	if isNew {
		say()
	}
}

// warnOnceFunc calls say once per process for key.
func (v *Vault) warnOnceFunc(key string, say func()) {
	if _, seen := v.warned.LoadOrStore("notice\x00"+key, struct{}{}); !seen {
		say()
	}
}

// mergeCopies merges the conflict copies of the strand rel's tie-off that
// reconcile found; the caller holds the strand.
func (v *Vault) mergeCopies(rel string) {
	cs := v.copies.take(rel)
	if len(cs) == 0 {
		return
	}
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return
	}
	for _, c := range cs {
		rep, err := tieoff.MergeFile(v.fs, t, c)
		switch {
		case err != nil:
			v.log.Error("cannot merge a sync tool's conflict copy of a tie-off; both stay as they are", "tieoff", t, "copy", c, "err", err)
		case !rep.Removed:
			v.noticeOnce("conflict:"+c, func() {
				v.log.Warn("merged a sync tool's conflict copy of a tie-off, but it holds text that is not a section knotd can place: the copy stays; compare it with the tie-off, keep what you want, then delete the copy",
					"tieoff", t, "copy", c, "sections_added", rep.Added)
			})
		default:
			v.log.Info("merged a sync tool's conflict copy of a tie-off into it, each section once, and removed the copy",
				"tieoff", t, "copy", c, "sections_added", rep.Added)
		}
	}
}
