package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/vaultfs"
)

// Step 3 of the pipeline (pipeline.go), prepare: the strand's session.
// knotd decides which conversation a strand continues, and writes its
// knot_session into the strand where it writes sessions (write_session:
// true, before the strand's first run), without ever
// clobbering a save of the user's: a write the user's save races is
// started over (errRetry), and a save that went into the file knotd
// replaced is put back or kept (settle).

// sessionKeeper is the pipeline's prepare step for the strand's session
// and knotd's own writes into strands (see above).
type sessionKeeper struct {
	pl       *Pipeline
	sessions sessionClaims // sessions of the runs being prepared or under way
}

// writesSession reports whether knotd writes the strand's knot_session
// into it: for an agent that keeps a conversation, when the user asked
// for it (write_session: true; by default knotd writes nothing into
// notes).
func (sk *sessionKeeper) writesSession(w *work) bool {
	h := sk.pl.h
	return w.keeps && h.Config().WriteSession
}

// newConversation gives the strand, whose knot_session is "new", a new
// session: the conversation starts afresh, without a resume handle. The
// new session replaces "new" in the strand where knotd writes sessions;
// elsewhere the state keeps it, and the "new" left in the strand asks
// for nothing more until it is written again.
func (sk *sessionKeeper) newConversation(w *work) error {
	h := sk.pl.h
	id := uuid.NewString()
	h.Log().Info("note asks for a new conversation (knot_session: new); giving it a new session", "strand", w.rel, "session", id, "was", w.rec.Session)
	if !sk.sessions.claim(id, w.rel) {
		return fmt.Errorf("vault: a new session %s is taken", id) // a UUID collision: never
	}
	if sk.writesSession(w) {
		updated, err := frontmatter.SetSession(w.content, id)
		if err != nil {
			return err
		}
		if err := sk.writeStrand(w, updated); err != nil {
			return err
		}
	}
	w.session, w.newSession, w.resume = id, true, ""
	w.fields.Session, w.fields.Resume = id, ""
	return nil
}

// ensureSession decides the strand's session before its run, and writes
// it into the strand where knotd writes sessions, before the strand's
// first run (giveSession), without clobbering an edit of the user's. In
// order:
//
//   - the strand's own knot_session (have), unless another strand holds
//     it: then this one is a copy (of a template, say) and gets a session
//     of its own, or its original moved here and its history follows;
//   - the session knotd recorded for the strand (it lost its key: a save
//     that dropped it, a sync that picked an older copy, git checkout);
//   - the session its tie-off's markers record, on a device that has no
//     record of the strand;
//   - a new one.
//
// A session is claimed for the strand until its run is committed, so
// that notes copied from one template, run at once, each get their own.
func (sk *sessionKeeper) ensureSession(w *work, have string) error {
	h := sk.pl.h
	if have != "" {
		owner, taken, err := h.Store().BySession(have)
		if err != nil {
			return err
		}
		if (!taken || owner.Path == w.rel) && sk.sessions.claim(have, w.rel) {
			w.session, w.newSession = have, w.rec.Session != have
			return nil
		}
		if taken && owner.Path != w.rel {
			if _, where, err := h.LstatStrand(owner.Path); err == nil && where == Absent && !w.has && !h.Dry() {
				// The owner is gone: the strand moved (or was copied, and
				// the original deleted) and no reconcile paired the two
				// paths yet. Move the history here and start over with
				// it, unless the owner is being processed right now (its
				// Deleted run): then this is a copy like any other.
				moved, err := h.Move(owner.Path, w.rel)
				if err != nil {
					return err
				}
				if moved {
					return errRetry
				}
			}
		}
		// A copy: its conversation is its own, and the original's resume
		// handle is not its to continue.
		w.resume = w.rec.Resume
		if id := w.rec.Session; id != "" && id != have && sk.ownSession(w, id) {
			// It got its own session before (knotd writes none into
			// it, or the write did not happen): it keeps that one.
			w.session, w.newSession = id, false
			return sk.giveSession(w, id, "note is a copy of another note; it keeps the session of its own it was given")
		}
		id := uuid.NewString()
		if !sk.sessions.claim(id, w.rel) {
			return fmt.Errorf("vault: a new session %s is taken", id) // a UUID collision: never
		}
		h.Log().Info("note is a copy of another note; giving it a session of its own", "strand", w.rel, "original", owner.Path)
		w.session, w.newSession, w.resume = id, true, ""
		return sk.giveSession(w, id, "")
	}
	if id := w.rec.Session; id != "" && sk.ownSession(w, id) {
		w.session, w.newSession = id, false
		return sk.giveSession(w, id, "note lost its knot_session; giving it back its recorded session")
	}
	if !w.has {
		if id := sk.markerSessionOf(w); id != "" && sk.ownSession(w, id) {
			w.session, w.newSession = id, false
			return sk.giveSession(w, id, "note has no knot_session; its tie-off names its session")
		}
	}
	id := uuid.NewString()
	if !sk.sessions.claim(id, w.rel) {
		return fmt.Errorf("vault: a new session %s is taken", id) // a UUID collision: never
	}
	w.session, w.newSession = id, true
	return sk.giveSession(w, id, "")
}

// ownSession reports whether the strand may have the session id: no other
// recorded strand holds it, and no other strand's run has claimed it. It
// claims id for the strand.
func (sk *sessionKeeper) ownSession(w *work, id string) bool {
	h := sk.pl.h
	owner, taken, err := h.Store().BySession(id)
	if err != nil || (taken && owner.Path != w.rel) {
		return false
	}
	return sk.sessions.claim(id, w.rel)
}

// giveSession writes the strand's session id into it where knotd writes
// sessions (saying why, when why is set), and only before the strand's
// first run (or in place of the knot_session: new the user wrote);
// elsewhere, and afterwards, the state and the tie-off's markers keep it.
// A key a save dropped is not written back: every write into a note is a
// chance to race a save, and writing it at every run made sync tools
// record a conflict each time (issue 22).
func (sk *sessionKeeper) giveSession(w *work, id, why string) error {
	h := sk.pl.h
	w.fields.Session = id
	if !sk.writesSession(w) || !w.fields.NewSession && !sk.firstRun(w) {
		return nil
	}
	updated, err := frontmatter.SetSession(w.content, id)
	if err != nil {
		// A frontmatter block knotd cannot edit without risk: the note
		// is left as it is, and its session lives in the state and the
		// tie-off's markers, as with write_session: false.
		h.WarnOnce(w.rel, "knotd cannot write knot_session into this note's frontmatter, so it leaves the note as it is; the conversation goes on from knotd's state", "err", err)
		return nil
	}
	if why != "" {
		h.Log().Info(why, "strand", w.rel, "session", id)
	}
	return sk.writeStrand(w, updated)
}

// firstRun reports whether the strand is before its first run, as far as
// its session goes: knotd recorded none for it, and its tie-off's markers
// name none.
func (sk *sessionKeeper) firstRun(w *work) bool {
	return w.rec.Session == "" && sk.markerSessionOf(w) == ""
}

// markerSessionOf returns the session the newest answer in the strand's
// tie-off records, "" when there is none knotd can use.
func (sk *sessionKeeper) markerSessionOf(w *work) string {
	sk.pl.loadTail(w)
	if w.tail == nil {
		return ""
	}
	sec, ok, err := sk.pl.NewestAnswer(w.rel, w.tail)
	if err != nil || !ok {
		return ""
	}
	return MarkerSession(sec)
}

// previousFields returns the knotd keys of the strand's last processed
// version (zero when there is none, or they cannot be read).
func (w *work) previousFields() frontmatter.Fields {
	if w.previous == nil {
		return frontmatter.Fields{}
	}
	doc, err := frontmatter.Parse(w.previous)
	if err != nil {
		return frontmatter.Fields{}
	}
	return doc.Fields
}

// newConversationAsked starts a new conversation in rec when the strand's
// version recorded without a run newly asks for one (knot_session: new,
// set by the user or by knotd reset, with no other change): the request
// is kept in the state, and the next run starts afresh.
func (sk *sessionKeeper) newConversationAsked(w *work, rec *state.Record) {
	h := sk.pl.h
	if w.content == nil {
		return
	}
	doc, err := frontmatter.Parse(w.content)
	if err != nil || !doc.Fields.NewSession || w.previousFields().NewSession {
		return
	}
	rec.Session, rec.Resume, rec.Totals = uuid.NewString(), "", nil
	rec.Agent, rec.ContextTokens, rec.ContextWindow = "", 0, 0
	h.Log().Info("note asks for a new conversation (knot_session: new); its next run starts one", "strand", w.rel, "session", rec.Session, "was", w.rec.Session)
}

// onlyOwnKeysChanged reports whether before and after differ only in
// knotd's own keys: knot_session added, changed, removed or moved (with
// the empty frontmatter block knotd created for it), or a knot_resume
// removed (knotd wrote handles into notes once). knotd's own write, a
// sync tool carrying it, git discarding it: none is a change to run on. A
// knot_resume set to a new handle is the user's choice of a conversation,
// and runs.
func (sk *sessionKeeper) onlyOwnKeysChanged(before, after []byte) bool {
	if before == nil {
		return false
	}
	if !bytes.Equal(frontmatter.WithoutOwnKeys(before), frontmatter.WithoutOwnKeys(after)) {
		return false
	}
	a, errA := frontmatter.Parse(after)
	b, errB := frontmatter.Parse(before)
	return errA == nil && errB == nil && (a.Fields.Resume == "" || a.Fields.Resume == b.Fields.Resume)
}

// writeStrand replaces the strand's content with updated, unless the user
// saved it since it was read (then errRetry: start over from the disk).
// With --dry-run nothing is written: the run is shown as it would be.
func (sk *sessionKeeper) writeStrand(w *work, updated []byte) error {
	h := sk.pl.h
	if h.Dry() {
		w.content, w.hash = updated, state.HashOf(updated)
		return nil
	}
	sk.settle(w) // an earlier write's, if any
	g, err := frontmatter.WriteFileDeferred(h.FS(), w.rel, w.content, updated)
	w.guard = g
	if errors.Is(err, frontmatter.ErrChanged) || errors.Is(err, fs.ErrNotExist) {
		if w.lastAttempt {
			// The user keeps saving (or keeps the strand open for
			// writing): the run goes on without knotd's write, and the
			// state keeps the session.
			h.Log().Info("the note kept changing while knotd wrote its knot_session; it runs without it, and knotd keeps the session in its state", "strand", w.rel)
			return nil
		}
		return errRetry
	}
	if err != nil {
		return fmt.Errorf("vault: write frontmatter of %s: %w", w.rel, err)
	}
	info, ok, err := sk.statWritten(w.rel, updated)
	if err != nil || !ok {
		return errRetry // the user saved right after knotd: start over
	}
	w.content, w.info, w.hash = updated, info, state.HashOf(updated)
	w.wrote = append(w.wrote, w.hash)
	w.unsyncedDir = path.Dir(w.rel)
	h.OwnWrote(w.rel, state.StampOf(info))
	return nil
}

// settle ends the watch over knotd's last write of the strand (see
// vaultfs.Guard), once any save that was under way at that write must be
// over: before the run's record is committed. It reports whether such a
// save went into the file knotd replaced (it is put back, and the strand
// no longer holds what knotd wrote), or whether that cannot be known.
// A save that could not be put back without losing a newer one is kept
// in the state directory, and said.
func (sk *sessionKeeper) settle(w *work) bool {
	if w == nil || w.guard == nil {
		return false
	}
	g := w.guard
	w.guard = nil
	return sk.pl.SettleGuard(w.rel, g)
}

// SettleGuard settles g, the guard of a write of the strand rel: a save
// that went into the file the write replaced is put back, or kept in the
// rescued folder and said. It reports whether the strand holds more than
// what knotd wrote (or that is not known).
func (pl *Pipeline) SettleGuard(rel string, g *vaultfs.Guard) bool {
	h := pl.h
	changed, err := g.Settle()
	if err == nil {
		return changed
	}
	var late *vaultfs.LateSave
	if errors.As(err, &late) {
		if where, rerr := pl.Rescue(rel, late.Content); rerr != nil {
			h.Log().Error("a save of the note went into the file knotd had just replaced, and knotd cannot keep it", "strand", rel, "err", rerr)
		} else {
			h.Log().Warn("a save of the note went into the file knotd had just replaced, and the note holds a newer save now: the earlier one is kept here", "strand", rel, "kept", where)
		}
	} else {
		h.Log().Warn("cannot look for a save that went into the file knotd replaced while writing the note", "strand", rel, "err", err)
	}
	return true
}

// Rescue keeps content, a save of the strand rel that could not go back
// into the vault, in the state directory's rescued folder (0600), and
// returns its path.
func (pl *Pipeline) Rescue(rel string, content []byte) (string, error) {
	h := pl.h
	base := h.Folder().Dir
	if base == "" {
		home, err := statedir.Home()
		if err != nil {
			return "", err
		}
		base = home
	}
	dir := filepath.Join(base, "rescued")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	name := h.Now().UTC().Format("20060102T150405.000000000Z") + "-" + strings.NewReplacer("/", "%2F", "\\", "%5C").Replace(rel)
	if len(name) > 200 {
		name = name[:200]
	}
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return p, err
}

// statWritten returns the stat of the strand at rel if it holds exactly
// want, which knotd just wrote: the stat is taken before the read, so a
// save of the user's in between shows as different content (ok false),
// never as knotd's version with the user's stamp.
func (sk *sessionKeeper) statWritten(rel string, want []byte) (os.FileInfo, bool, error) {
	h := sk.pl.h
	got, _, info, tooBig, err := h.ReadStrand(rel, max(h.Config().MaxStrandSize, int64(len(want))))
	if err != nil {
		return nil, false, err
	}
	return info, !tooBig && bytes.Equal(got, want), nil
}

// sessionClaims are the sessions of the runs being prepared or under way,
// each with its strand: two strands never run with one session, even
// before either run is recorded (notes copied from one template and run
// at once). The zero value is ready.
type sessionClaims struct {
	mu   sync.Mutex
	held map[string]string // session → strand path
}

// claim holds the session id for the strand rel, unless another strand
// holds it, and reports whether rel holds it now.
func (c *sessionClaims) claim(id, rel string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if owner, ok := c.held[id]; ok {
		return owner == rel
	}
	if c.held == nil {
		c.held = make(map[string]string)
	}
	c.held[id] = rel
	return true
}

// release lets go of every session the strand rel holds.
func (c *sessionClaims) release(rel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, owner := range c.held {
		if owner == rel {
			delete(c.held, id)
		}
	}
}
