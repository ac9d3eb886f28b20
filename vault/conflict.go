package vault

import (
	"path"
	"slices"
	"strings"
	"sync"

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
//   - a copy of a note is never a strand: knotd says so once (the notice is
//     kept in the state, so a restart does not say it again) and leaves it
//     to the user.

// isConflictPath reports whether rel is a sync tool's conflict copy of a
// file in the vault (outside knotd's own folder).
func isConflictPath(rel string) bool {
	return strand.ValidateRel(rel) == nil && !strand.IsStrandPath(rel) &&
		rel != strand.StateDir && !isUnder(rel, strand.StateDir) && strand.IsConflictCopy(path.Base(rel))
}

// isUnder reports whether rel lies below the directory dir.
func isUnder(rel, dir string) bool {
	return len(rel) > len(dir) && rel[len(dir)] == '/' && rel[:len(dir)] == dir
}

// isWatched is what knotd looks for in a vault: strands and conflict
// copies.
func isWatched(rel string) bool { return strand.IsStrandPath(rel) || isConflictPath(rel) }

// copies are the conflict copies of tie-offs reconcile found, by strand,
// waiting for the strand's next processing to merge them.
type copies struct {
	mu  sync.Mutex
	tie map[string][]string // strand -> its tie-off's copies
}

func (c *copies) add(rel, copy string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tie == nil {
		c.tie = map[string][]string{}
	}
	if !slices.Contains(c.tie[rel], copy) {
		c.tie[rel] = append(c.tie[rel], copy)
	}
}

func (c *copies) take(rel string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.tie[rel]
	delete(c.tie, rel)
	return cs
}

// sawCopies handles the conflict copies a reconcile pass found: it says
// each note copy once, and returns the strands whose tie-off has a copy to
// merge (their processing merges it).
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
		v.noticeOnce("conflict:"+c, func() {
			v.log.Warn("a sync tool made a conflict copy of a note: knotd does not run it; compare it with the note, keep what you want, then delete the copy",
				"copy", c, "note", originalOf(c))
		})
	}
	return strands
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
