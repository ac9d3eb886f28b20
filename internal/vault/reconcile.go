package vault

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/vault/internal/conflict"

	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/watcher"
)

// reconciler compares the vault's files against the state store: what
// changed, what moved (the history follows a rename), and the conflict
// copies sync tools leave, folded into their strand and tie-off
// (conflict.go). It owns the conflict copies of tie-offs waiting to be
// merged.
type reconciler struct {
	v      *Vault
	copies conflict.Copies // conflict copies of tie-offs waiting to be merged
}

// reconcile compares the disk with the store for everything the hints
// cover and returns, sorted, the strands that have a change to process
// (docs/design.md#what-happens-on-a-change): a strand file whose content hash differs from the processed
// one (Created or Modified), or a recorded strand that is gone (Deleted).
//
// It is the one mechanism behind watch mode, --once, the startup catch-up,
// overflow recovery and polling. It is cheap first: a file whose stamp
// (size, mtime, inode) equals its record's is not read; a file whose stamp
// changed but whose content did not (a touch, a no-op save, knotd's own
// write) is restamped and produces nothing. Renames are applied here: a
// new path whose knot_session belongs to a recorded strand that is gone is
// the same strand moved, and its record and tie-off move with it without
// an agent run.
//
// reconcile does not decide the event: the processor looks again when the
// run starts, because the strand may change while it waits.
//
// A strand that cannot be looked at (too many open files, an I/O error)
// is logged and left out; see reconcileAll for a caller that tries it
// again.
func (r *reconciler) reconcile(hints []watcher.Hint) ([]string, error) {
	changed, _, err := r.reconcileAll(hints)
	return changed, err
}

// reconcileAll is reconcile that also returns, sorted, the strands it
// could not look at, for the caller to try again.
func (r *reconciler) reconcileAll(hints []watcher.Hint) (changed, unlooked []string, err error) {
	v := r.v
	var (
		cands     []candidate
		copies    []string // sync tools' conflict copies
		subtrees  []string // to walk
		listing   *watcher.Listing
		plainFull bool
	)
	for _, h := range hints {
		switch {
		case h.Full() && h.Listing != nil:
			listing = h.Listing
		case h.Full():
			plainFull = true
		case h.Dir:
			subtrees = append(subtrees, h.Path)
		case strand.IsStrandPath(h.Path):
			cands = append(cands, candidate{path: h.Path, src: fromHint})
		case conflict.IsCopy(h.Path):
			copies = append(copies, h.Path)
		default:
			if rel, ok := v.pipe.WaitingFor(h.Path); ok {
				// The tie-off its change waits for changed: it may be
				// writable now.
				cands = append(cands, candidate{path: rel, src: fromHint})
			}
		}
	}
	full := plainFull || listing != nil
	if plainFull {
		listing, subtrees = nil, []string{""}
	}

	// A full rescan's listing is a walk of the whole vault, made by the
	// watcher as it set its watches. Hints in the same batch may be newer
	// than it: the subtrees they name are walked again, and the paths
	// they name are looked at again (fromHint ranks above fromListing).
	if listing != nil {
		cands = slices.Grow(cands, len(listing.Files))
		for _, f := range listing.Files {
			switch {
			case withinAny(f.Path, subtrees):
			case conflict.IsCopy(f.Path):
				copies = append(copies, f.Path)
			default:
				cands = append(cands, candidate{path: f.Path, info: f.Info, src: fromListing})
			}
		}
	}
	for _, dir := range subtrees {
		err := r.walkWith(dir, true, conflict.Watched, func(rel string, info fs.FileInfo) {
			if conflict.IsCopy(rel) {
				copies = append(copies, rel)
				return
			}
			cands = append(cands, candidate{path: rel, info: info, src: fromWalk})
		})
		if err != nil {
			return nil, nil, err
		}
	}
	cands = sortCandidates(cands)
	var (
		created []string
		gone    = make(map[string]state.Record)
		touched = make(map[string]state.Stamp)
	)
	realDirs := make(map[string]struct{})
	classify := func(c candidate, rec state.Record, has bool) {
		rel := c.path
		st, where, err := r.lookStrand(c, realDirs)
		if err != nil {
			v.log.Warn("cannot look at note", "strand", rel, "err", err)
			if !errors.Is(err, fs.ErrPermission) { // fixed by the user, who then saves
				unlooked = append(unlooked, rel)
			}
			return
		}
		switch {
		case where == ignored:
		case where == absent && has:
			gone[rel] = rec
		case where == absent:
		case !has:
			created = append(created, rel)
		case st == rec.Stamp:
		default:
			same, err := r.sameContent(rel, rec.Hash)
			if err != nil {
				v.log.Warn("cannot read note", "strand", rel, "err", err)
				if !errors.Is(err, fs.ErrPermission) {
					unlooked = append(unlooked, rel)
				}
				return
			}
			switch t := r.trusted(st); {
			case !same:
				changed = append(changed, rel)
			case t != rec.Stamp:
				touched[rel] = t
			default:
				// Within the racy window the recorded stamp has no time,
				// and the restamp would write the same one again: a
				// commit (two syncs) for nothing, after each of knotd's
				// own writes.
			}
		}
	}
	if full {
		err = r.mergeRecords(cands, classify)
	} else {
		err = r.lookupRecords(cands, subtrees, classify)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("vault: reconcile: %w", err)
	}

	for _, rel := range created {
		owner, moved, err := r.detectRename(rel, gone)
		if err != nil {
			v.log.Warn("cannot check whether a new note was moved", "strand", rel, "err", err)
		}
		if moved {
			// The record moved to rel; compare the content with it now.
			info, where, err := r.lstatStrand(rel)
			if err == nil && where == present {
				if same, herr := r.sameContent(rel, owner.Hash); herr == nil && same {
					touched[rel] = r.stamp(info)
					continue
				}
			}
		}
		changed = append(changed, rel)
	}
	for rel := range gone {
		changed = append(changed, rel)
	}

	if len(touched) > 0 && !v.dry {
		err := v.store.Update(func(tx *state.Tx) error {
			for rel, st := range touched {
				if err := tx.Restamp(rel, st); err != nil && !errors.Is(err, state.ErrNotFound) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("vault: reconcile: restamp: %w", err)
		}
	}
	changed = append(changed, r.sawCopies(copies)...)
	slices.Sort(changed)
	slices.Sort(unlooked)
	return slices.Compact(changed), slices.Compact(unlooked), nil
}

// mergeRecords calls fn, in path order, for every candidate of cands
// (sorted, one per path) and every recorded strand, with its record if it
// has one: one pass over the records beside the candidates, for a
// reconcile of the whole vault. A recorded strand that is no candidate
// is passed as a fromRecord candidate.
func (r *reconciler) mergeRecords(cands []candidate, fn func(c candidate, rec state.Record, has bool)) error {
	v := r.v
	recs := v.store.Records("")
	for {
		r, err := recs.Peek()
		if err != nil {
			return err
		}
		switch {
		case len(cands) > 0 && (r == nil || cands[0].path < r.Path):
			fn(cands[0], state.Record{}, false)
			cands = cands[1:]
		case r != nil:
			c := candidate{path: r.Path, src: fromRecord}
			if len(cands) > 0 && cands[0].path == r.Path {
				c, cands = cands[0], cands[1:]
			}
			fn(c, *r, true)
			recs.Next()
		default:
			return nil
		}
	}
}

// lookupRecords calls fn, in path order, for every candidate of cands
// (sorted, one per path) and every strand recorded below the subtrees,
// with its record if it has one. The records are looked up a chunk at a
// time, in one short read transaction each, not one transaction per
// strand.
func (r *reconciler) lookupRecords(cands []candidate, subtrees []string, fn func(c candidate, rec state.Record, has bool)) error {
	v := r.v
	if len(subtrees) > 0 {
		for _, dir := range subtrees {
			recs := v.store.Records(dir)
			for {
				r, err := recs.Peek()
				if err != nil {
					return err
				}
				if r == nil {
					break
				}
				cands = append(cands, candidate{path: r.Path, src: fromRecord})
				recs.Next()
			}
		}
		cands = sortCandidates(cands)
	}
	paths := make([]string, len(cands))
	for i, c := range cands {
		paths[i] = c.path
	}
	return v.store.Lookup(paths, func(i int, rec state.Record, ok bool) { fn(cands[i], rec, ok) })
}

// A candidate is one strand path a reconcile pass looks at, with where it
// came from and, if a walk saw it, what lstat said of it then.
type candidate struct {
	path string
	// info is what the walk that found the path saw (it looked relative
	// to the open directory, did not follow links, and applied the ignore
	// rules), or nil: the pass must look at the path itself.
	info fs.FileInfo
	src  source
}

// source is where a reconcile candidate came from. When several name the
// same path, the first in this order wins: it is the newest look.
type source uint8

const (
	fromWalk    source = iota // this pass's walk of a hinted subtree
	fromHint                  // a file hint: look at the path now
	fromListing               // a full rescan's listing, older than the hints with it
	fromRecord                // recorded, and below a hinted subtree
)

// sortCandidates sorts cands by path and keeps, of each path, the
// candidate whose source wins.
func sortCandidates(cands []candidate) []candidate {
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return cmp.Compare(a.src, b.src)
	})
	return slices.CompactFunc(cands, func(a, b candidate) bool { return a.path == b.path })
}

// withinAny reports whether the path rel lies below one of the
// directories dirs ("" is the vault root).
func withinAny(rel string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(dir string) bool { return rel != dir && strand.Within(rel, dir) })
}

// walk calls fn with every strand path on disk below the vault-relative
// directory dir ("" for the whole vault) that the ignore rules keep, and,
// when stat is set, what lstat says of it (nil if it vanished meanwhile).
// Non-regular files named like strands are passed too, so that the caller
// sees (and reports) them; unreadable directories are logged and skipped.
//
// The walk lists several directories at once; fn is called
// under a lock, one call at a time, in no particular order.
func (r *reconciler) walk(dir string, stat bool, fn func(rel string, info fs.FileInfo)) error {
	return r.walkWith(dir, stat, strand.IsStrandPath, fn)
}

// walkWith is walk for the paths that want accepts (walk's are strands).
func (r *reconciler) walkWith(dir string, stat bool, want func(rel string) bool, fn func(rel string, info fs.FileInfo)) error {
	v := r.v
	var mu sync.Mutex
	err := v.rules.Walk(v.root, dir, ignore.WalkOptions{Concurrent: true}, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && rel == dir {
				return fs.SkipAll // the subtree is gone: its records decide
			}
			v.log.Warn("cannot read part of the vault; its notes are skipped until it can be read", "path", rel, "err", err)
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if rel == strand.StateDir {
				return fs.SkipDir
			}
			return nil
		}
		if !want(rel) {
			return nil
		}
		var info fs.FileInfo
		if stat {
			info, _ = d.Info() // a file gone meanwhile is looked at again by the caller
		}
		mu.Lock()
		defer mu.Unlock()
		fn(rel, info)
		return nil
	})
	if err != nil {
		return fmt.Errorf("vault: walk %q: %w", dir, err)
	}
	return nil
}

// presence is what lstatStrand found at a strand path.
type presence uint8

const (
	// absent: nothing is there, or something that is not a regular file
	// (a symbolic link, a FIFO, a directory): not a strand.
	absent presence = iota
	// present: a regular file the ignore rules keep.
	present
	// ignored: the ignore rules leave the path out; a record it has is
	// kept as it is (un-ignoring the path compares it again), and no event
	// comes of it.
	ignored
)

// lookStrand is lstatStrandIn for one candidate of a reconcile pass,
// answered from what the pass's walk saw when it saw the path, if it did.
// It returns the strand's stamp.
func (r *reconciler) lookStrand(c candidate, realDirs map[string]struct{}) (state.Stamp, presence, error) {
	v := r.v
	info := c.info
	if info == nil {
		var (
			where presence
			err   error
		)
		info, where, err = r.lstatStrandIn(c.path, realDirs)
		if info == nil || err != nil {
			return state.Stamp{}, where, err
		}
		return state.StampOf(info), where, nil
	}
	if !info.Mode().IsRegular() {
		v.warnOnce(c.path, "not a regular file: knotd only processes regular .md files and leaves this one alone", "type", info.Mode().Type().String())
		return state.Stamp{}, absent, nil
	}
	return state.StampOf(info), present, nil
}

// lstatStrand looks at the strand path rel without following a symbolic
// link. A path that exists but is not a regular file is reported once in
// the log and is absent. An error means the answer is unknown (permission
// denied on a parent, I/O error): the caller must not conclude that the
// strand was deleted.
func (r *reconciler) lstatStrand(rel string) (info fs.FileInfo, where presence, err error) {
	return r.lstatStrandIn(rel, nil)
}

// lstatStrandIn is lstatStrand with a set of directories already found to
// be real during one reconcile pass (nil: none), so that a pass over many
// strands does not lstat the same ancestors again for each of them.
func (r *reconciler) lstatStrandIn(rel string, realDirs map[string]struct{}) (info fs.FileInfo, where presence, err error) {
	v := r.v
	if err := strand.ValidateRel(rel); err != nil {
		return nil, absent, err
	}
	// The folders on the way first: a strand below a symbolic link to a
	// directory is not looked at through it (the walker never follows
	// such links either), and a link out of the vault is never resolved.
	dir, nested, err := r.linkedDir(rel, realDirs)
	switch {
	case err != nil:
		return nil, absent, err
	case nested != "":
		// Another vault's strand: left alone, and a record it has kept (a
		// nested vault is no deletion).
		v.warnOnce(nested, "a folder with a .knot of its own is a vault of its own: its own knotd answers it, this one leaves it alone")
		return nil, ignored, nil
	case dir != "":
		if !v.rules.Ignored(dir, true) {
			v.warnOnce(dir, "a symbolic link to a directory: knotd does not follow it, so the notes it leads to are left alone")
		}
		return nil, absent, nil
	}
	info, err = v.fs.Lstat(filepath.FromSlash(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist) || isNotDir(err):
		return nil, absent, nil
	case err != nil:
		return nil, absent, err
	case v.rules.Ignored(rel, false):
		return info, ignored, nil
	case !info.Mode().IsRegular():
		v.warnOnce(rel, "not a regular file: knotd only processes regular .md files and leaves this one alone", "type", info.Mode().Type().String())
		return info, absent, nil
	}
	return info, present, nil
}

// linkedDir returns the first directory on the way from the vault root to
// the strand rel that is not a real directory (a symbolic link, which may
// lead out of the vault), or "" if there is none or a directory on the way
// is missing (then the strand is too). The walker never follows such
// links; a hint for a path beneath one (the directory was replaced by a
// link after its event) must not either. Each directory is looked at
// without following it, inside the vault root. nested is the first
// directory on the way that is a vault of its own (it has a .knot): its
// own knotd answers the strands below it, never this one.
//
// realDirs, when not nil, holds directories found real (and no vault of
// their own) earlier in the same pass; they are not looked at again, and
// those found so are added.
func (r *reconciler) linkedDir(rel string, realDirs map[string]struct{}) (linked, nested string, err error) {
	v := r.v
	for i := 0; i < len(rel); i++ {
		if rel[i] != '/' {
			continue
		}
		dir := rel[:i]
		if _, ok := realDirs[dir]; ok {
			continue
		}
		fi, err := v.fs.Lstat(filepath.FromSlash(dir))
		if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			return "", "", nil
		}
		if err != nil {
			return "", "", err
		}
		if !fi.IsDir() {
			if fi.Mode()&fs.ModeSymlink != 0 {
				return dir, "", nil
			}
			return "", "", nil // a file where a folder was: the strand is gone
		}
		if m, err := v.fs.Lstat(filepath.FromSlash(dir + "/" + ignore.VaultMarker)); err == nil && m.IsDir() {
			return "", dir, nil
		}
		if realDirs != nil {
			realDirs[dir] = struct{}{}
		}
	}
	return "", "", nil
}

// sameContent reports whether the strand at rel has the content hash h.
func (r *reconciler) sameContent(rel string, h state.Hash) (bool, error) {
	v := r.v
	got, _, err := v.hashFile(rel)
	if err != nil {
		return false, err
	}
	return got == h, nil
}

// detectRename checks whether the new strand rel is a recorded strand that
// moved, whether or not it ever ran, and by whatever way it moved:
//
//   - its knot_session belongs to a record whose path is gone;
//   - it is the very file a gone record describes (same device and inode)
//     and either untouched since (same size and modification time) or
//     born before that record was last committed (an inode a deleted file
//     left and a new file took is born after): a rename, with or without
//     an edit;
//   - its content is exactly that of one gone record, and of no other: a
//     move by copy and delete (a sync tool, git).
//
// If so it moves the record (and the tie-off, when the new path has none
// yet), removes the old path from gone and returns the record as it was
// (with --dry-run it only says so). A strand being processed is not moved
// (see claims); the processor pairs the two paths later.
func (r *reconciler) detectRename(rel string, gone map[string]state.Record) (owner state.Record, moved bool, err error) {
	v := r.v
	if len(gone) == 0 {
		return r.renamedBySession(rel, gone)
	}
	owner, moved, err = r.renamedBySession(rel, gone)
	if moved || err != nil {
		return owner, moved, err
	}
	from, ok, err := r.renamedFrom(rel, gone)
	if err != nil || !ok {
		return owner, false, err
	}
	owner = gone[from]
	if !v.dry {
		if moved, err := r.move(from, rel, false); err != nil || !moved {
			return owner, false, err
		}
	}
	delete(gone, from)
	return owner, true, nil
}

// renamedBySession is detectRename by knot_session: gone need not hold
// the record, whose path is looked at on disk.
func (r *reconciler) renamedBySession(rel string, gone map[string]state.Record) (owner state.Record, moved bool, err error) {
	v := r.v
	head, err := v.readHead(rel, frontmatterScanLimit)
	if err != nil {
		return owner, false, err
	}
	doc, err := frontmatter.Parse(head)
	if err != nil || doc.Fields.Session == "" {
		return owner, false, nil // no usable session
	}
	owner, ok, err := v.store.BySession(doc.Fields.Session)
	if err != nil || !ok || owner.Path == rel {
		return owner, false, err
	}
	if _, isGone := gone[owner.Path]; !isGone {
		// The owner still exists (a copy, not a move) or was not part of
		// this pass; look at the disk to be sure.
		_, where, err := r.lstatStrand(owner.Path)
		if err != nil || where != absent {
			return owner, false, err
		}
	}
	if !v.dry {
		if moved, err := r.move(owner.Path, rel, false); err != nil || !moved {
			return owner, false, err
		}
	}
	delete(gone, owner.Path)
	return owner, true, nil
}

// renamedFrom returns the gone record's path that the new strand rel is,
// by file identity or by content (see detectRename).
func (r *reconciler) renamedFrom(rel string, gone map[string]state.Record) (string, bool, error) {
	v := r.v
	f, info, err := v.openStrand(rel)
	if err != nil {
		return "", false, err
	}
	st := state.StampOf(info)
	born := birthTime(f, info)
	_ = f.Close() // read only
	if st.Inode != 0 {
		for _, from := range sortedKeys(gone) {
			rec := gone[from]
			if rec.Stamp.Inode != st.Inode || rec.Stamp.Device != st.Device {
				continue
			}
			untouched := rec.Stamp.Size == st.Size && rec.Stamp.ModTime == st.ModTime && st.ModTime != 0
			if untouched || (born != 0 && !rec.Processed.IsZero() && born < rec.Processed.UnixNano()) {
				return from, true, nil
			}
		}
	}
	h, _, err := v.hashFile(rel)
	if err != nil {
		return "", false, err
	}
	match := ""
	for _, from := range sortedKeys(gone) {
		if gone[from].Hash == h {
			if match != "" {
				return "", false, nil // two gone strands held this content: which one moved is not known
			}
			match = from
		}
	}
	return match, match != "", nil
}

// move moves the record of the strand at from, and its tie-off, to the
// strand at to: the strand was moved. It does nothing and reports false
// while either path is being processed; holding says the caller already
// holds to.
func (r *reconciler) move(from, to string, holding bool) (bool, error) {
	v := r.v
	if !v.claims.tryClaim(from) {
		return false, nil
	}
	defer v.claims.release(from)
	if !holding {
		if !v.claims.tryClaim(to) {
			return false, nil
		}
		defer v.claims.release(to)
	}
	if err := r.moveTieOff(from, to); err != nil {
		return false, err
	}
	if err := v.store.Rename(from, to); err != nil {
		return false, err
	}
	v.log.Info("note moved; its history moves with it", "from", from, "to", to)
	return true, nil
}

// moveTieOff renames the tie-off of the strand at from to that of the
// strand at to, unless from has no tie-off or to already has one (the user
// moved it too, or a new strand took the name first): then both stay.
func (r *reconciler) moveTieOff(from, to string) error {
	v := r.v
	oldRel, err := strand.TieOffPath(from)
	if err != nil {
		return err
	}
	newRel, err := strand.TieOffPath(to)
	if err != nil {
		return err
	}
	oldName, newName := filepath.FromSlash(oldRel), filepath.FromSlash(newRel)
	if _, err := v.fs.Lstat(oldName); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil && v.pipe.UnwritableTieOff(oldRel, err) {
		// Its folder is a link out of the vault now (swapped for one):
		// what is there is not knotd's to move.
		v.log.Warn("note moved, but its old folder is a symbolic link that leads out of the vault: knotd leaves the old tie-off there", "old", oldRel, "new", newRel)
		return nil
	}
	if _, err := v.fs.Lstat(newName); err == nil {
		v.log.Warn("note moved but its new place already has a tie-off; the old tie-off stays where it is", "old", oldRel, "new", newRel)
		return nil
	}
	if err := v.fs.Rename(oldName, newName); err != nil {
		return fmt.Errorf("vault: move tie-off %s to %s: %w", oldRel, newRel, err)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// racyWindow is how recent a file's modification time may be for its
// stamp to be trusted. Many file systems keep coarse times (a kernel
// tick, a second, two seconds on FAT), so a file written again within the
// same tick with the same size keeps its stamp; a stamp whose time is that
// recent is recorded without its time, and the next reconcile reads and
// hashes the file instead of trusting it ("racy git" has the same cure).
const racyWindow = 2 * time.Second

// stamp returns the stamp to record for a file knotd just looked at.
func (r *reconciler) stamp(info fs.FileInfo) state.Stamp { return r.trusted(state.StampOf(info)) }

// trusted returns st as it may be recorded: without its time when that
// time is too recent to be trusted.
func (r *reconciler) trusted(st state.Stamp) state.Stamp {
	// The file system's clock, not v.now: the time is compared with a
	// file's modification time.
	if time.Since(time.Unix(0, st.ModTime)) < racyWindow {
		st.ModTime = 0 // never equal to a real file's stamp: hash it next time
	}
	return st
}
