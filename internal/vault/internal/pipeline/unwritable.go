package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sync"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vault/internal/conflict"
	"github.com/knotd/knotd/internal/vaultfs"
)

// A tie-off knotd can never write until the user changes something: its
// name is a symbolic link (even to a file inside the vault), a directory
// or a FIFO, or its folder is a symbolic link that does not lead to a
// folder inside the vault (swapped for a link out of it, say). Unlike a
// full disk or a read-only tie-off, waiting does not help, so:
//
//   - before a run, knotd looks at the tie-off (read-only, inside the
//     root, refusing links; the append refuses them again, so nothing
//     rests on the look): if it is such a tie-off, the agent is not run
//     and the change waits, unrecorded, said once, until the tie-off can
//     be written (while knotd watches, a change of the tie-off, say the
//     link removed, looks at the strand again);
//   - a reply that meets such a tie-off after its run (the link appeared
//     meanwhile, or a reply journaled by an earlier knotd) is kept in the
//     rescued folder of knotd's state directory, its run is recorded as
//     done, and the failure is said once, with where the reply is.

// tieOffs looks at tie-offs that can never be written as they are (see
// above), and keeps the strands whose change waits for one.
type tieOffs struct {
	h Host
	// waits holds the strands whose change waits for their tie-off:
	// tie-off path → strand.
	waits sync.Map
}

// unwritable reports why the tie-off of the strand rel can never be
// written as it is (nil when it can, or when what stops it may pass).
func (ts *tieOffs) unwritable(rel string) error {
	h := ts.h
	t, err := strand.TieOffPath(rel)
	if err != nil {
		return nil
	}
	f, _, err := vaultfs.Open(h.FS(), t)
	if err == nil {
		_ = f.Close() // read only: a close error loses nothing
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) && ts.folderReachable(t) {
		return nil // the append creates it
	}
	if ts.unwritableErr(t, err) {
		return err
	}
	return nil
}

// check is unwritable, and forgets that the strand rel
// waited for its tie-off when it can be written.
func (ts *tieOffs) check(rel string) error {
	err := ts.unwritable(rel)
	if err == nil {
		if t, terr := strand.TieOffPath(rel); terr == nil {
			ts.waits.Delete(t)
		}
	}
	return err
}

// watched is what the watcher hints: what knotd looks for in a vault
// (conflict.Watched), and the tie-offs that changes wait for.
func (ts *tieOffs) watched(rel string) bool {
	if conflict.Watched(rel) {
		return true
	}
	_, ok := ts.waits.Load(rel)
	return ok
}

// waitingFor returns the strand whose change waits for the tie-off t, if
// one does; it no longer waits for it then (its processing looks again).
func (ts *tieOffs) waitingFor(t string) (string, bool) {
	rel, ok := ts.waits.LoadAndDelete(t)
	if !ok {
		return "", false
	}
	return rel.(string), true
}

// unwritableErr reports whether err, met opening or writing the
// tie-off t, is one that lasts until the user changes the vault: t is not
// a regular file (a symbolic link, a directory, a FIFO), or its folder is
// a symbolic link that does not lead to a folder inside the vault.
func (ts *tieOffs) unwritableErr(t string, err error) bool {
	if errors.Is(err, vaultfs.ErrNotRegular) {
		return true
	}
	return !ts.folderReachable(t) && ts.folderLinked(t)
}

// folderReachable reports whether the folder of t is a folder inside the
// vault (through links that stay inside it).
func (ts *tieOffs) folderReachable(t string) bool {
	h := ts.h
	dir := path.Dir(t)
	if dir == "." {
		return true
	}
	fi, err := h.FS().Stat(filepath.FromSlash(dir))
	return err == nil && fi.IsDir()
}

// folderLinked reports whether a folder on the way to t is a symbolic
// link.
func (ts *tieOffs) folderLinked(t string) bool {
	h := ts.h
	for dir := path.Dir(t); dir != "." && dir != "/"; dir = path.Dir(dir) {
		if fi, err := h.FS().Lstat(filepath.FromSlash(dir)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// waitFor says, once, that the strand rel does not run while its
// tie-off cannot be written (why), and returns the skip reason. While
// knotd watches, a change of the tie-off (the link removed) looks at the
// strand again (see waitingFor).
func (ts *tieOffs) waitFor(rel string, why error) string {
	h := ts.h
	t, _ := strand.TieOffPath(rel)
	ts.waits.Store(t, rel)
	h.NoticeOnce("unwritable-tieoff:"+t, func() {
		h.Log().Warn("the note's tie-off cannot be written, so knotd does not run the note: make the tie-off a regular file in the vault (not a symbolic link), in a folder of the vault; the change runs then",
			"strand", rel, "tieoff", t, "err", why)
	})
	return "waits for its tie-off, which cannot be written: " + why.Error()
}

// Watched is what the watcher hints: what knotd looks for in a vault
// (conflict.Watched), and the tie-offs that changes wait for.
func (pl *Pipeline) Watched(rel string) bool { return pl.ties.watched(rel) }

// WaitingFor returns the strand whose change waits for the tie-off t, if
// one does; it no longer waits for it then (its processing looks again).
func (pl *Pipeline) WaitingFor(t string) (string, bool) { return pl.ties.waitingFor(t) }

// UnwritableTieOff reports whether err, met opening or writing the
// tie-off t, is one that lasts until the user changes the vault (see
// above).
func (pl *Pipeline) UnwritableTieOff(t string, err error) bool { return pl.ties.unwritableErr(t, err) }

// ReplyKept is the error of a run whose reply could not go into its
// tie-off, which can never be written as it is: the reply is kept in
// Kept, outside the vault, and the run is recorded as done.
type ReplyKept struct {
	Strand, TieOff, RunID string
	// Kept is the file holding the reply's section.
	Kept string
	Err  error
}

func (e *ReplyKept) Error() string {
	return fmt.Sprintf("vault: %s: the reply of run %s cannot go into its tie-off %s (%v): it is kept in %s; make the tie-off a regular file in the vault and copy the reply into it",
		e.Strand, e.RunID, e.TieOff, e.Err, e.Kept)
}

func (e *ReplyKept) Unwrap() error { return e.Err }

// keepReply keeps the journaled run p's section, which cannot go into its
// tie-off t (err), in the rescued folder, and returns the error that says
// where.
func (pl *Pipeline) keepReply(p state.Pending, j Journal, t string, err error) (*ReplyKept, error) {
	sec, ferr := tieoff.Format(j.Section)
	if ferr != nil {
		return nil, ferr
	}
	kept, rerr := pl.Rescue(t, sec)
	if rerr != nil {
		return nil, rerr
	}
	return &ReplyKept{Strand: p.Record.Path, TieOff: t, RunID: p.RunID, Kept: kept, Err: err}, nil
}

// sayKept says that a journaled run's reply could not go into its
// tie-off and is kept outside the vault (its run is done: said once).
func (pl *Pipeline) sayKept(kept *ReplyKept) {
	h := pl.h
	h.Log().Error("a run's reply cannot go into its tie-off, which is not a regular file in the vault: knotd kept the reply in its state directory and does not try again; make the tie-off a regular file in the vault and copy the reply into it",
		"strand", kept.Strand, "tieoff", kept.TieOff, "run", kept.RunID, "kept", kept.Kept, "err", kept.Err)
}
