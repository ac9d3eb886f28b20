package statedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/flock"
	"github.com/knotd/knotd/internal/vaultfs"
)

// LegacyDir is the folder inside a vault where knotd kept its machine files
// before they moved to the state directory; it stays the home of the
// vault's shared files (config.yaml, the devices' heartbeats).
const LegacyDir = ".knot"

// Migration says what Migrate moved.
type Migration struct {
	// State is set when a state store was moved.
	State bool
	// OldState is the name, in the folder, given to a legacy state store
	// that was not used because the folder already had one ("" if none).
	OldState string
	// Transcripts and LLMLogs count the files moved.
	Transcripts, LLMLogs int
	// LockRemoved is set when the vault's old lock file was removed.
	LockRemoved bool
}

// Moved reports whether anything was moved.
func (m Migration) Moved() bool {
	return m.State || m.OldState != "" || m.Transcripts > 0 || m.LLMLogs > 0 || m.LockRemoved
}

// Migrate moves, once, the machine files an earlier knotd kept inside the
// vault (vault is its root) into the vault's folder: .knot/state.db with
// its journal of unfinished runs, .knot/runs/*.jsonl, .knot/llm/* and the
// old lock file. Call it while holding the vault's Lock.
//
// It first takes the old lock file: if an earlier knotd still holds it,
// Migrate moves nothing and returns a *LockedError naming it. Files are
// copied, synced and renamed into the folder, and only then removed from
// the vault, so a crash during Migrate loses nothing (the next start
// finishes the move; a store already in the folder wins and the vault's
// copy is kept beside it). Every name is opened inside the vault root,
// never through a symbolic link: a link is removed, never followed.
func (l *Lock) Migrate(vault *os.Root) (m Migration, err error) {
	legacy, err := vault.Lstat(LegacyDir)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !legacy.IsDir() {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("statedir: migrate: %w", err)
	}
	held, err := lockLegacy(vault, l.Folder.Root)
	if err != nil {
		return m, err
	}
	defer func() {
		if held == nil {
			return
		}
		if cerr := held.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("statedir: migrate: %w", cerr)
		}
	}()
	stateName := path.Join(LegacyDir, StateFile)
	if ok, err := regular(vault, stateName); err != nil {
		return m, err
	} else if ok {
		dst := StateFile
		if _, err := os.Lstat(l.Folder.StateFile()); err == nil {
			dst = StateFile + ".legacy-" + time.Now().UTC().Format("20060102T150405Z")
			m.OldState = dst
		} else {
			m.State = true
		}
		if err := moveOut(vault, stateName, l.Folder.Dir, dst); err != nil {
			return m, err
		}
	}
	if m.Transcripts, err = moveDir(vault, path.Join(LegacyDir, runsDir), l.Folder.Runs(), func(name string) bool {
		return strings.HasSuffix(name, ".jsonl")
	}); err != nil {
		return m, err
	}
	if m.LLMLogs, err = moveDir(vault, path.Join(LegacyDir, llmDir), l.Folder.LLM(), func(string) bool { return true }); err != nil {
		return m, err
	}
	if held != nil {
		// Removed while it is held: no earlier knotd can take it between
		// the check and the removal.
		if err := vault.Remove(path.Join(LegacyDir, LockFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return m, fmt.Errorf("statedir: migrate: remove the old lock: %w", err)
		}
		m.LockRemoved = true
	}
	if err := vaultfs.SyncDir(vault, LegacyDir); err != nil {
		return m, fmt.Errorf("statedir: migrate: %w", err)
	}
	return m, nil
}

// lockLegacy takes the vault's old lock file, if there is one, so that no
// earlier knotd runs on the vault while its files move. A symbolic link at
// its name is removed, never followed.
func lockLegacy(vault *os.Root, root string) (*os.File, error) {
	name := path.Join(LegacyDir, LockFile)
	f, _, err := vaultfs.OpenWrite(vault, name, os.O_RDWR, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, vaultfs.ErrNotRegular), errors.Is(err, vaultfs.ErrHardLinked):
		if rerr := vault.Remove(name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return nil, fmt.Errorf("statedir: migrate: %s is not knotd's lock (%v) and cannot be removed: %w", name, err, rerr)
		}
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("statedir: migrate: %w", err)
	}
	if err := flock.TryLock(f); err != nil {
		h := readHolder(f)
		_ = f.Close() // read only so far
		if errors.Is(err, flock.ErrLocked) {
			return nil, &LockedError{Vault: root, Holder: h}
		}
		if !flock.Unsupported(err) {
			return nil, fmt.Errorf("statedir: migrate: lock %s: %w", name, err)
		}
		return nil, nil // no locks on this file system: nothing to honour
	}
	return f, nil
}

// regular reports whether name is a regular file in the vault; a symbolic
// link or another kind of file at name is removed if it is a link and
// otherwise left alone, and reported as absent.
func regular(vault *os.Root, name string) (bool, error) {
	fi, err := vault.Lstat(filepath.FromSlash(name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("statedir: migrate: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		if err := vault.Remove(filepath.FromSlash(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("statedir: migrate: remove the link %s: %w", name, err)
		}
		return false, nil
	}
	return fi.Mode().IsRegular(), nil
}

// moveOut copies the vault's file name to dir/dst (vaultfs.ReplaceFrom:
// a new file, synced, mode 0600, renamed into place, the directory
// synced), then removes it from the vault.
func moveOut(vault *os.Root, name, dir, dst string) error {
	src, fi, err := vaultfs.Open(vault, name)
	if err != nil {
		return fmt.Errorf("statedir: migrate: %w", err)
	}
	defer src.Close() // read only
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("statedir: migrate: %w", err)
	}
	to, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("statedir: migrate: %w", err)
	}
	defer to.Close() // a directory handle: nothing written through it
	if err := vaultfs.ReplaceFrom(to, dst, io.LimitReader(src, fi.Size()), vaultfs.ReplaceOptions{Perm: 0o600}); err != nil {
		return fmt.Errorf("statedir: migrate %s: %w", name, err)
	}
	if err := vault.Remove(filepath.FromSlash(name)); err != nil {
		return fmt.Errorf("statedir: migrate: remove %s from the vault (it is copied): %w", name, err)
	}
	return nil
}

// moveDir moves the regular files of the vault's directory name whose
// names keep accepts into dir, skipping those dir already has (their
// vault copy is removed all the same), and removes the directory from the
// vault if that leaves it empty. It returns how many it moved.
func moveDir(vault *os.Root, name, dir string, keep func(string) bool) (int, error) {
	if ok, err := isDir(vault, name); err != nil || !ok {
		return 0, err
	}
	d, err := vault.Open(filepath.FromSlash(name))
	if err != nil {
		return 0, fmt.Errorf("statedir: migrate: %w", err)
	}
	entries, err := d.ReadDir(-1)
	_ = d.Close() // read only
	if err != nil {
		return 0, fmt.Errorf("statedir: migrate: %w", err)
	}
	n := 0
	for _, e := range entries {
		if !e.Type().IsRegular() || !keep(e.Name()) {
			continue
		}
		src := path.Join(name, e.Name())
		if _, err := os.Lstat(filepath.Join(dir, e.Name())); err == nil {
			if err := vault.Remove(filepath.FromSlash(src)); err != nil {
				return n, fmt.Errorf("statedir: migrate: %w", err)
			}
			continue
		}
		if err := moveOut(vault, src, dir, e.Name()); err != nil {
			return n, err
		}
		n++
	}
	if err := vault.Remove(filepath.FromSlash(name)); err != nil && !errors.Is(err, fs.ErrNotExist) && !isNotEmpty(err) {
		return n, fmt.Errorf("statedir: migrate: %w", err)
	}
	return n, nil
}

// isDir reports whether name is a real directory in the vault (not a link).
func isDir(vault *os.Root, name string) (bool, error) {
	fi, err := vault.Lstat(filepath.FromSlash(name))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("statedir: migrate: %w", err)
	}
	return fi.IsDir(), nil
}
