package vault

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vault/internal/conflict"
	"github.com/knotd/knotd/internal/vaultfs"
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
//   - a copy of a note is never a strand. A copy that is exactly one of
//     knotd's own writes of the note (its knot_session; a newer save from
//     another device replaced it), or that holds nothing the note lacks
//     (knotd's keys aside), is removed. When knotd's own write of the
//     note's knot_session made it (the other device's save met that write,
//     and lost because it was older) and the copy holds every line of the
//     note, knotd folds it back: the note gets the copy's content with
//     its knot_session, the copy is removed, and the note runs on what the
//     other device saved. Any other copy knotd says once (the notice is
//     kept in the state, so a restart does not say it again) and leaves
//     to the user.

// sawCopies handles the conflict copies a reconcile pass found: it returns
// the strands whose tie-off or note has a copy to merge (their processing
// merges it), and says once each note copy that belongs to no strand.
func (r *reconciler) sawCopies(found []string) (strands []string) {
	v := r.v
	for _, c := range found {
		if info, where, err := r.lstatStrand(c); err != nil || where != present || info == nil {
			continue // gone already, or not a regular file
		}
		if orig, ok := tieoff.ConflictOf(c); ok {
			if rel, ok := strand.StrandPath(orig); ok {
				if !v.dry {
					r.copies.Add(rel, c)
				}
				strands = append(strands, rel)
				continue
			}
		}
		if orig := conflict.OriginalOf(c); orig != c && strand.IsStrandPath(orig) && !v.dry {
			r.copies.AddNote(orig, c)
			strands = append(strands, orig)
			continue
		}
		r.sayNoteCopy(c)
	}
	return strands
}

// sayNoteCopy says, once, that the conflict copy c of a note is left to
// the user.
func (r *reconciler) sayNoteCopy(c string) {
	v := r.v
	v.noticeOnce("conflict:"+c, func() {
		v.log.Warn("a sync tool made a conflict copy of a note: knotd does not run it; compare it with the note, keep what you want, then delete the copy",
			"copy", c, "note", conflict.OriginalOf(c))
	})
}

// fold is the pipeline's first step for the strand rel: the sync
// conflict copies reconcile found of its tie-off are merged into it
// (mergeCopies), then those of its note folded back (foldNoteCopies), so
// that the change the pipeline looks at is the whole of it. A dry run
// folds nothing. The caller holds the strand.
func (r *reconciler) fold(rel string) {
	if r.v.dry {
		return
	}
	r.mergeCopies(rel)
	r.foldNoteCopies(rel)
}

// foldNoteCopies folds back the conflict copies of the strand rel's note
// that reconcile found, or removes them, where that loses nothing (see
// foldNoteCopy), and says the others once; the caller holds the strand.
func (r *reconciler) foldNoteCopies(rel string) {
	v := r.v
	for _, c := range r.copies.TakeNotes(rel) {
		how, err := r.foldNoteCopy(rel, c)
		switch {
		case err != nil:
			v.log.Error("cannot fold a sync tool's conflict copy of a note back into it", "strand", rel, "copy", c, "err", err)
			r.sayNoteCopy(c)
		case how == conflict.NoFold:
			r.sayNoteCopy(c)
		case how == conflict.Folded:
			v.log.Info("a save from another device met knotd's write of the note's knot_session, and the sync tool kept it in a conflict copy: knotd put it back into the note and removed the copy",
				"strand", rel, "copy", c)
		case how == conflict.OwnWrite:
			v.log.Info("removed a sync tool's conflict copy of a note that is knotd's own write of its knot_session, which a newer save replaced", "strand", rel, "copy", c)
		default:
			v.log.Info("removed a sync tool's conflict copy of a note that holds nothing the note lacks (knotd's keys aside)", "strand", rel, "copy", c)
		}
	}
}

// foldNoteCopy deals with the conflict copy c of the strand rel's note,
// while the note is there to compare it with. A copy that is knotd's own
// write of the note, or holds nothing the note lacks, is removed (see
// conflict.Judge). A copy that knotd's write of the note's knot_session
// made is folded back into the note: the note is exactly the version
// knotd last processed, which holds the session knotd keeps for it
// (knotd wrote it there), and the copy, knotd's keys aside, holds every
// line of the note in the same order (the other device only added to
// what knotd wrote over). The note then gets the copy's content with its
// knot_session, and the copy is removed. Any other copy is left as it is
// (conflict.NoFold).
func (r *reconciler) foldNoteCopy(rel, c string) (int, error) {
	v := r.v
	note, _, _, tooBig, err := v.readStrand(rel, v.config().MaxStrandSize)
	if errors.Is(err, fs.ErrNotExist) || tooBig {
		return conflict.NoFold, nil
	}
	if err != nil {
		return conflict.NoFold, err
	}
	cp, cfi, err := vaultfs.ReadFile(v.fs, filepath.FromSlash(c), v.config().MaxStrandSize)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, vaultfs.ErrTooLarge) {
		return conflict.NoFold, nil
	}
	if err != nil {
		return conflict.NoFold, err
	}
	rec, has, err := v.store.Get(rel)
	if err != nil {
		return conflict.NoFold, err
	}
	if how := conflict.Judge(note, cp, rec.Wrote); how != conflict.NoFold {
		if how == conflict.OwnWrite && !conflict.LinesWithin(frontmatter.WithoutOwnKeys(cp), frontmatter.WithoutOwnKeys(note)) {
			// knotd's write carried the version it wrote over, which
			// may hold words typed on this device that the winning save
			// never had: they are kept, outside the vault, before the
			// copy goes.
			where, err := v.pipe.Rescue(c, cp)
			if err != nil {
				return conflict.NoFold, fmt.Errorf("keep the copy before removing it: %w", err)
			}
			v.log.Info("the conflict copy holds lines the note lacks; knotd keeps it outside the vault", "copy", c, "kept", where)
		}
		return r.removeCopy(c, cfi, how)
	}
	if !has || rec.Session == "" {
		return conflict.NoFold, nil
	}
	processed, ok, err := v.store.Content(rel)
	if err != nil || !ok || !bytes.Equal(note, processed) {
		return conflict.NoFold, err
	}
	if doc, err := frontmatter.Parse(note); err != nil || doc.Fields.Session != rec.Session {
		return conflict.NoFold, nil
	}
	if doc, err := frontmatter.Parse(cp); err != nil || (doc.Fields.Session != "" && doc.Fields.Session != rec.Session) {
		return conflict.NoFold, nil
	}
	if !conflict.LinesWithin(frontmatter.WithoutOwnKeys(note), frontmatter.WithoutOwnKeys(cp)) {
		return conflict.NoFold, nil
	}
	updated, err := frontmatter.SetSession(cp, rec.Session)
	if err != nil {
		return conflict.NoFold, nil
	}
	g, err := frontmatter.WriteFile(v.fs, rel, note, updated)
	v.pipe.SettleGuard(rel, g) // a save that raced the write is put back, or kept
	if errors.Is(err, vaultfs.ErrChanged) {
		return conflict.NoFold, nil // saved meanwhile: the copy stays, for the user
	}
	if err != nil {
		return conflict.NoFold, err
	}
	if err := v.store.Update(func(tx *state.Tx) error { return tx.AddWrote(rel, state.HashOf(updated)) }); err != nil {
		v.log.Warn("cannot remember knotd's write of the note; a conflict copy of it would be left to you", "strand", rel, "err", err)
	}
	return r.removeCopy(c, cfi, conflict.Folded)
}

// removeCopy removes the conflict copy c, whose content, read when it was
// read (fstat before the read), is in its note or is knotd's own write;
// it reports how. A copy that was changed or replaced since is left (for
// a later look, or the user): knotd removes only the file it read.
func (r *reconciler) removeCopy(c string, read fs.FileInfo, how int) (int, error) {
	v := r.v
	now, err := v.fs.Lstat(filepath.FromSlash(c))
	if errors.Is(err, fs.ErrNotExist) {
		return how, nil
	}
	if err != nil {
		return conflict.NoFold, fmt.Errorf("look at the copy again before removing it: %w", err)
	}
	if !os.SameFile(read, now) || state.StampOf(read) != state.StampOf(now) {
		return conflict.NoFold, nil // changed since it was read: it stays
	}
	if err := v.fs.Remove(filepath.FromSlash(c)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return conflict.NoFold, fmt.Errorf("the copy's content is in the note, but the copy cannot be removed: %w", err)
	}
	return how, nil
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
func (r *reconciler) mergeCopies(rel string) {
	v := r.v
	cs := r.copies.Take(rel)
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
