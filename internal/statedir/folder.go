package statedir

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/knotd/knotd/internal/flock"
	"github.com/knotd/knotd/internal/vaultfs"
)

// Folder is one vault's folder in the state directory.
type Folder struct {
	// Dir is the folder's path.
	Dir string
	// Root is the vault directory it belongs to.
	Root string
	// MovedFrom is where the vault was when this folder last served it,
	// if that was another path (the vault folder was moved or renamed);
	// "" otherwise. Only Acquire sets it.
	MovedFrom string
}

// StateFile returns the path of the vault's state store.
func (f Folder) StateFile() string { return filepath.Join(f.Dir, StateFile) }

// Running returns the path of the file that is there while a knotd uses
// the folder: one found when knotd starts means the last one did not stop
// cleanly.
func (f Folder) Running() string { return filepath.Join(f.Dir, runningFile) }

// Runs returns the directory of the vault's run transcripts.
func (f Folder) Runs() string { return filepath.Join(f.Dir, runsDir) }

// LLM returns the directory of the llm preset's private logs.
func (f Folder) LLM() string { return filepath.Join(f.Dir, llmDir) }

// info is the content of a folder's vault.json.
type info struct {
	// Root is the vault's path when the folder last served it.
	Root string `json:"root"`
	// Device and Inode identify the vault directory on its file system
	// (zero on Windows), and Birth (its creation time in nanoseconds,
	// where the file system records one) tells it from a new directory
	// that got a deleted one's inode number.
	Device uint64 `json:"device,omitempty"`
	Inode  uint64 `json:"inode,omitempty"`
	Birth  int64  `json:"birth,omitempty"`
	// Created is when the folder was made.
	Created time.Time `json:"created"`
}

// maxInfo bounds what is read of a vault.json.
const maxInfo = 64 << 10

// identity is the vault directory's identity on its file system: its
// device and inode numbers, and its birth time where the file system
// records one (0 otherwise).
type identity struct {
	device, inode uint64
	birth         int64
}

func (id identity) known() bool { return id.inode != 0 }

// same reports whether a folder that recorded in, for a vault then at
// in.Root, belongs to the vault now at root with identity id. Inode
// numbers are reused (a directory deleted and another made is often given
// the same one), so the inode alone is not enough: the birth time must
// match too, or, where either is unknown, the path.
func (id identity) same(in info, root string) bool {
	if !id.known() || in.Inode == 0 {
		return in.Root == root
	}
	if in.Inode != id.inode || in.Device != id.device {
		return false
	}
	if id.birth != 0 && in.Birth != 0 {
		return in.Birth == id.birth
	}
	return in.Root == root
}

// rootIdentity returns the identity of the vault directory root.
func rootIdentity(root string) (identity, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return identity{}, fmt.Errorf("statedir: %w", err)
	}
	if !fi.IsDir() {
		return identity{}, fmt.Errorf("statedir: %s is not a directory", root)
	}
	id := dirIdentity(fi)
	id.birth = birthTime(root, fi)
	return id, nil
}

// Find returns the folder of the vault at root (an absolute path) in the
// state directory home, changing nothing; ok is false when this machine
// has none (knotd never answered the vault here). A vault that was moved
// is found at its new path.
func Find(home, root string) (f Folder, ok bool, err error) {
	id, err := rootIdentity(root)
	if err != nil {
		return Folder{}, false, err
	}
	dir, _, ok, err := find(home, root, id)
	if err != nil || !ok {
		return Folder{}, ok, err
	}
	return Folder{Dir: dir, Root: root}, true, nil
}

// find looks through the folders of home for the one of the vault root
// with identity id; it returns the folder's path and what it recorded.
// A folder whose vault.json cannot be read belongs to no vault here.
func find(home, root string, id identity) (dir string, rec info, ok bool, err error) {
	base := filepath.Join(home, "vaults")
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return "", info{}, false, nil
	}
	if err != nil {
		return "", info{}, false, fmt.Errorf("statedir: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(base, e.Name())
		in, err := readInfo(d)
		if err != nil {
			continue // not a folder of ours, or damaged: it serves no vault
		}
		if id.same(in, root) {
			return d, in, true, nil
		}
	}
	return "", info{}, false, nil
}

func readInfo(dir string) (info, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return info{}, err
	}
	defer r.Close()
	b, _, err := vaultfs.ReadFile(r, infoFile, maxInfo)
	if err != nil {
		return info{}, err
	}
	var in info
	if err := json.Unmarshal(b, &in); err != nil {
		return info{}, fmt.Errorf("statedir: %s: %w", filepath.Join(dir, infoFile), err)
	}
	if !filepath.IsAbs(in.Root) {
		return info{}, fmt.Errorf("statedir: %s: no vault path", filepath.Join(dir, infoFile))
	}
	return in, nil
}

func writeInfo(dir string, in info) error {
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := vaultfs.Replace(r, infoFile, append(b, '\n'), vaultfs.ReplaceOptions{Perm: 0o600}); err != nil {
		return fmt.Errorf("statedir: %w", err)
	}
	return nil
}

// folderName makes a new folder's name from the vault's base name, for
// people who look: "notes-1a2b3c4d".
func folderName(root string) string {
	var b strings.Builder
	for _, r := range filepath.Base(root) {
		if b.Len() >= 32 {
			break
		}
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ', r == '.':
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name == "" {
		name = "vault"
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails (Go 1.24+)
	return name + "-" + hex.EncodeToString(rnd[:])
}

// registryWait bounds how long Acquire waits for another knotd that is
// finding or making its own folder at the same moment.
const registryWait = 10 * time.Second

// lockRegistry takes home's vaults.lock, which serialises finding and
// making folders, so that two knotd started on one new vault at once do
// not make two folders (and two locks) for it.
func lockRegistry(home string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Join(home, "vaults"), 0o700); err != nil {
		return nil, fmt.Errorf("statedir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(home, "vaults.lock"), os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("statedir: %w", err)
	}
	deadline := time.Now().Add(registryWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		err := flock.TryLock(f)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, flock.ErrLocked) || time.Now().After(deadline) {
			_ = f.Close() // nothing was written
			if errors.Is(err, flock.ErrLocked) {
				err = fmt.Errorf("held by another knotd for over %v", registryWait)
			}
			return nil, fmt.Errorf("statedir: lock %s: %w", f.Name(), err)
		}
		time.Sleep(delay) // another knotd holds it for a few file operations
	}
}

// locate finds the folder of the vault at root, or makes one, while the
// registry is locked. A vault found at a new path has its vault.json
// updated and MovedFrom set.
func locate(home, root string, now time.Time) (Folder, error) {
	id, err := rootIdentity(root)
	if err != nil {
		return Folder{}, err
	}
	dir, in, ok, err := find(home, root, id)
	if err != nil {
		return Folder{}, err
	}
	f := Folder{Dir: dir, Root: root}
	if ok {
		if in.Root != root || in.Birth == 0 && id.birth != 0 || in.Inode != id.inode {
			if in.Root != root {
				f.MovedFrom = in.Root
			}
			in.Root, in.Device, in.Inode, in.Birth = root, id.device, id.inode, id.birth
			if err := writeInfo(dir, in); err != nil {
				return Folder{}, err
			}
		}
		return f, nil
	}
	for range 10 {
		f.Dir = filepath.Join(home, "vaults", folderName(root))
		err = os.Mkdir(f.Dir, 0o700)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return Folder{}, fmt.Errorf("statedir: %w", err)
	}
	in = info{Root: root, Device: id.device, Inode: id.inode, Birth: id.birth, Created: now.UTC().Truncate(time.Second)}
	if err := writeInfo(f.Dir, in); err != nil {
		return Folder{}, err
	}
	return f, nil
}
