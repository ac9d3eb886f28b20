package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/vaultfs"
)

// Reset is what ResetStrand did to one strand.
type Reset struct {
	// Strand is the strand's vault-relative path.
	Strand string
	// Was is the session it had ("" for none); Session is the new one,
	// "" when it is left for the next run to make (knot_session: new).
	Was, Session string
	// Wrote says that knotd wrote the strand's knot_session (the new
	// session, or "new").
	Wrote bool
}

// ResetStrand starts a new conversation for the strand rel (vault-relative)
// on purpose: its next run starts afresh, in a new session, without a
// resume handle. knotd gives it a new session in its state and, where the
// strand holds a knot_session (knotd wrote it, or the user did), writes
// the new one there, so that it is the strand's everywhere the note
// syncs. A strand with no record yet gets knot_session: new. Nothing runs.
func (v *Vault) ResetStrand(rel string) (Reset, error) {
	r := Reset{Strand: rel}
	if !strand.IsStrandPath(rel) {
		return r, fmt.Errorf("vault: %s is not a note (a .md file that is not a tie-off)", rel)
	}
	v.claims.claim(rel)
	defer v.claims.release(rel)
	content, _, _, tooBig, err := v.readStrand(rel, v.config().MaxStrandSize)
	if err != nil {
		return r, fmt.Errorf("vault: %w", err)
	}
	if tooBig {
		return r, fmt.Errorf("vault: %s is larger than limits.max_strand_size", rel)
	}
	doc, err := frontmatter.Parse(content)
	if err != nil {
		return r, fmt.Errorf("vault: %s: %w", rel, err)
	}
	rec, has, err := v.store.Get(rel)
	if err != nil {
		return r, err
	}
	r.Was = rec.Session
	if !has {
		if doc.Fields.Session == "" && !doc.Fields.NewSession {
			return r, nil // no conversation yet: its first run starts one
		}
		r.Was = doc.Fields.Session
		return r, v.resetWrite(&r, content, frontmatter.NewSessionValue)
	}
	r.Session = uuid.NewString()
	if doc.Fields.Session != "" || doc.Fields.NewSession {
		if err := v.resetWrite(&r, content, r.Session); err != nil {
			return r, err
		}
	}
	prev, _, err := v.store.Content(rel)
	if err != nil {
		return r, err
	}
	rec.Session, rec.Resume, rec.Totals = r.Session, "", nil
	rec.Agent, rec.ContextTokens, rec.ContextWindow = "", 0, 0
	if prev == nil && rec.Hash != (state.Hash{}) {
		// A version knotd recorded without its content (over the size
		// limit): its record stays as it is, with the new session.
		return r, v.store.Update(func(tx *state.Tx) error { return tx.Put(rec, nil) })
	}
	return r, v.store.Put(rec, prev)
}

// resetWrite writes knot_session: value into the strand whose content is
// content.
func (v *Vault) resetWrite(r *Reset, content []byte, value string) error {
	var updated []byte
	var err error
	if value == frontmatter.NewSessionValue {
		updated, err = frontmatter.AskNewSession(content)
	} else {
		updated, err = frontmatter.SetSession(content, value)
	}
	if err != nil {
		return fmt.Errorf("vault: %s: %w", r.Strand, err)
	}
	g, err := frontmatter.WriteFile(v.fs, r.Strand, content, updated)
	if _, serr := g.Settle(); err == nil {
		err = serr
	}
	var late *vaultfs.LateSave
	if errors.As(err, &late) {
		where, rerr := v.pipe.Rescue(r.Strand, late.Content)
		return fmt.Errorf("vault: %s was saved while knotd wrote it; the save is kept in %s (%v)", r.Strand, where, rerr)
	}
	if err != nil {
		return fmt.Errorf("vault: %s (save it and try again): %w", r.Strand, err)
	}
	r.Wrote = true
	return nil
}

// ResetNote asks for a new conversation for the strand rel in a vault that
// another knotd holds: it writes knot_session: new into the strand (the
// knotd that holds the vault gives it a new session, and its next run
// starts afresh). root is the vault's root.
func ResetNote(root, rel string) (Reset, error) {
	r := Reset{Strand: rel}
	if !strand.IsStrandPath(rel) {
		return r, fmt.Errorf("vault: %s is not a note (a .md file that is not a tie-off)", rel)
	}
	fsys, err := os.OpenRoot(root)
	if err != nil {
		return r, fmt.Errorf("vault: %w", err)
	}
	defer fsys.Close() // read only
	content, _, err := vaultfs.ReadFile(fsys, rel, config.DefaultMaxStrandSize)
	if errors.Is(err, fs.ErrNotExist) {
		return r, fmt.Errorf("vault: %s: no such note", filepath.FromSlash(rel))
	}
	if err != nil {
		return r, fmt.Errorf("vault: %w", err)
	}
	doc, err := frontmatter.Parse(content)
	if err != nil {
		return r, fmt.Errorf("vault: %s: %w", rel, err)
	}
	r.Was = doc.Fields.Session
	v := &Vault{fs: fsys, log: slog.New(slog.DiscardHandler), now: time.Now}
	if home, err := statedir.Home(); err == nil {
		if f, ok, err := statedir.Find(home, root); err == nil && ok {
			v.folder = f
		}
	}
	return r, v.resetWrite(&r, content, frontmatter.NewSessionValue)
}
