package pipeline

import (
	"encoding/hex"
	"errors"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
)

// The vault is the truth and the state store a cache of it (docs/design.md#invariants,
// 8): every tie-off section's run marker records the content
// hash of the strand version it answered and the strand's session, so
// that a device whose state is missing, damaged, or older than the vault
// (another device answered meanwhile, a fresh clone, a restored backup)
// can tell which strands are answered without running them again.
//
// The hash is that of the strand without knotd's own keys
// (frontmatter.WithoutOwnKeys): what the user wrote. knotd's keys are
// never content, so a version that differs from the answered one only in
// them is answered too.

// answeredHash returns the hash a run marker records for content.
func answeredHash(content []byte) state.Hash {
	return state.HashOf(frontmatter.WithoutOwnKeys(content))
}

// MarkerHash is answeredHash in the marker's spelling: lower-case hex.
func MarkerHash(content []byte) string {
	h := answeredHash(content)
	return hex.EncodeToString(h[:])
}

// answered returns the newest section of w's tie-off if it already
// answers w: for a strand on disk, a section (of any event but Deleted)
// whose marker records the hash of its content now; for a gone strand, a
// Deleted section. It reads the tie-off's newest sections into w.tail for
// the prompt. A tie-off that cannot be read answers nothing (and the run
// goes on; request says why the prompt lacks it).
func (pl *Pipeline) answered(w *work) (tieoff.Section, bool) {
	pl.loadTail(w)
	if w.tail == nil {
		return tieoff.Section{}, false // no tie-off, or it cannot be read
	}
	sec, ok, err := pl.NewestAnswer(w.rel, w.tail)
	if err != nil || !ok {
		return sec, false
	}
	if w.event == strand.Deleted {
		return sec, sec.Event == strand.Deleted && sec.RunID != w.rec.LastRunID
	}
	return sec, sec.Event != strand.Deleted && sec.Hash != "" && sec.Hash == w.markerHash()
}

// markerHash is MarkerHash of w's content, computed once: knotd's own
// writes into the strand (its knot_session) do not change it.
func (w *work) markerHash() string {
	if w.marker == "" {
		w.marker = MarkerHash(w.content)
	}
	return w.marker
}

// commitAnswered records w's version as processed by the run whose
// section sec already answers it (another device's, or this one's before
// its state was lost), without running the agent again.
func (pl *Pipeline) commitAnswered(w *work, sec tieoff.Section) error {
	h := pl.h
	if h.Dry() {
		return nil
	}
	rec := w.rec
	rec.Path, rec.Stamp, rec.Hash = w.rel, h.Stamp(w.info), w.hash
	if sec.RunID != rec.LastRunID {
		rec.Turns++
	}
	rec.LastRunID, rec.Processed = sec.RunID, h.Now().UTC()
	rec.LastOutcome = state.OutcomeSucceeded
	// No conversation of this device's answered that version.
	rec.Agent, rec.ContextTokens, rec.ContextWindow = "", 0, 0
	if sec.Failed {
		rec.LastOutcome = state.OutcomeFailed
	}
	if s := MarkerSession(sec); s != "" {
		rec.Session = s
	}
	pl.sess.newConversationAsked(w, &rec)
	err := h.Store().Put(rec, w.content)
	if errors.Is(err, state.ErrSessionTaken) {
		// The session belongs to another strand here (this one is a copy
		// of it): the first run gives this strand one of its own.
		rec.Session, rec.Resume = w.rec.Session, w.rec.Resume
		if rec.Session == MarkerSession(sec) {
			rec.Session, rec.Resume = "", ""
		}
		err = h.Store().Put(rec, w.content)
	}
	if err != nil {
		return err
	}
	// The device that answered may have asked questions too: this one
	// answers them now (a handover), so it must know them.
	return h.RebuildQuestions(w.rel)
}

// answeredBefore reports whether the tie-off of the strand w, which this
// device has no record of, answered an earlier version of it: its newest
// section is a run's answer to a version of the strand (not its deletion)
// that the marker records.
func (pl *Pipeline) answeredBefore(w *work) bool {
	pl.loadTail(w)
	if w.tail == nil {
		return false
	}
	sec, ok, err := pl.NewestAnswer(w.rel, w.tail)
	return err == nil && ok && sec.Hash != "" && sec.Event != strand.Deleted
}

// loadTail reads the newest sections of w's tie-off into w.tail, once.
func (pl *Pipeline) loadTail(w *work) {
	if !w.tailRead {
		w.tail, w.tailErr = pl.readTail(w.rel)
		w.tailRead = true
	}
}

// MarkerSession returns the session a section's marker records, if it is
// a session knotd can use (a UUID, as knot_session must be); "" otherwise.
// The marker is someone else's input: a bad one must never become a
// note's session.
func MarkerSession(sec tieoff.Section) string {
	if _, err := uuid.Parse(sec.Session); err != nil || len(sec.Session) != 36 {
		return ""
	}
	return sec.Session
}
