package strand

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

const (
	// Ext is the extension every strand has.
	Ext = ".md"
	// TieOffExt replaces Ext to name a strand's tie-off.
	TieOffExt = ".tieoff.md"
	// StateDir is the directory, directly inside the vault, where knotd
	// keeps its own files.
	StateDir = ".knot"
)

// ErrBadPath is wrapped by every error about a path that is not a valid
// vault-relative path.
var ErrBadPath = errors.New("strand: invalid vault-relative path")

// ValidateRel checks that rel is a clean, slash-separated, vault-relative
// path that stays inside the vault: not empty, not absolute (neither "/x"
// nor a Windows volume), no "." or ".." element, no empty element, no
// backslash and no NUL byte.
func ValidateRel(rel string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrBadPath, rel, why) }
	switch {
	case rel == "":
		return bad("empty")
	case strings.ContainsRune(rel, 0):
		return bad("contains a NUL byte")
	case strings.HasPrefix(rel, "/"):
		return bad("absolute")
	case strings.ContainsRune(rel, '\\'):
		return bad("contains a backslash")
	case filepath.VolumeName(rel) != "" || (len(rel) >= 2 && rel[1] == ':'):
		return bad("has a volume name")
	}
	for el := range strings.SplitSeq(rel, "/") { // no allocation: the ignore rules ask for every path
		switch el {
		case "":
			return bad("has an empty element")
		case ".", "..":
			return bad("has a " + el + " element")
		}
	}
	return nil
}

// Within reports whether the vault-relative path rel is dir or lies below
// it; dir "" is the vault root, which holds every path.
func Within(rel, dir string) bool {
	return dir == "" || rel == dir || len(rel) > len(dir) && rel[len(dir)] == '/' && strings.HasPrefix(rel, dir)
}

// Abs joins a validated vault-relative path onto root.
func Abs(root, rel string) (string, error) {
	if err := ValidateRel(rel); err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(rel)), nil
}

// IsTieOff reports whether the name (a base name or a path) is a tie-off.
func IsTieOff(name string) bool {
	return strings.HasSuffix(name, TieOffExt) && len(path.Base(name)) > len(TieOffExt)
}

// TieOffPath returns the tie-off path of the strand at rel:
// "a/b.md" becomes "a/b.tieoff.md". rel must be a valid strand path.
func TieOffPath(rel string) (string, error) {
	if err := ValidateRel(rel); err != nil {
		return "", err
	}
	if !isStrandName(path.Base(rel)) {
		return "", fmt.Errorf("%w %q: not a note", ErrBadPath, rel)
	}
	dir, base := path.Split(rel)
	stem := strings.TrimSuffix(base, Ext)
	if len(stem)+len(TieOffExt) <= maxNameLen {
		return dir + stem + TieOffExt, nil
	}
	// The strand's name is within a few bytes of the longest a file
	// system takes: its tie-off's name would be longer. The stem is cut
	// (at a character boundary) and marked with a hash of the whole
	// name, so that two long names that share their start keep apart.
	sum := sha256.Sum256([]byte(base))
	mark := "~" + hex.EncodeToString(sum[:4])
	cut := maxNameLen - len(TieOffExt) - len(mark)
	for cut > 0 && !utf8.RuneStart(stem[cut]) {
		cut--
	}
	return dir + stem[:cut] + mark + TieOffExt, nil
}

// maxNameLen is the longest file name (one path element, in bytes) the
// common file systems take: a strand's name may be that long; its
// tie-off's name is then shortened (see TieOffPath).
const maxNameLen = 255

// StrandPath is the inverse of TieOffPath: "a/b.tieoff.md" becomes
// "a/b.md". It reports false when rel is not a valid tie-off path. The
// shortened tie-off name of a strand whose name is near the longest a
// file system takes has no inverse: its strand is named in its sections.
func StrandPath(rel string) (string, bool) {
	if ValidateRel(rel) != nil || !IsTieOff(rel) {
		return "", false
	}
	if shortened(path.Base(rel)) {
		return "", false
	}
	s := strings.TrimSuffix(rel, TieOffExt) + Ext
	if !isStrandName(path.Base(s)) {
		return "", false
	}
	return s, true
}

// shortened reports whether the tie-off name base is one TieOffPath
// shortened: as long as a name may be, give or take a cut character,
// and ending in ~ and eight hex digits before the extension.
func shortened(base string) bool {
	stem := strings.TrimSuffix(base, TieOffExt)
	if len(base) < maxNameLen-utf8.UTFMax+1 || len(stem) < 9 || stem[len(stem)-9] != '~' {
		return false
	}
	_, err := hex.DecodeString(stem[len(stem)-8:])
	return err == nil
}

// isStrandName reports whether a base name is one knotd treats as a strand:
// it ends in ".md", is not a tie-off, and is not an editor or sync artefact
// (see isArtefact). Whether the file is regular is checked separately,
// where the file is looked at.
func isStrandName(name string) bool {
	if !strings.HasSuffix(name, Ext) || len(name) == len(Ext) {
		return false
	}
	return !IsTieOff(name) && !isArtefact(name)
}

// IsStrandPath reports whether rel is a valid vault-relative path to a
// strand name outside knotd's own state directory. It does not look at the
// directories on the way (ignore rules are the watcher's job).
func IsStrandPath(rel string) bool {
	if ValidateRel(rel) != nil {
		return false
	}
	if rel == StateDir || strings.HasPrefix(rel, StateDir+"/") {
		return false
	}
	return isStrandName(path.Base(rel))
}

// isArtefact reports whether a base name is a temporary or backup file that
// an editor or sync tool makes, never a note of the user's:
//
//   - emacs lock and autosave files: ".#note.md", "#note.md#"
//   - vim swap, backup and write probe: ".note.md.swp" (.swo, .swx…),
//     "note.md~", "4913"
//   - Syncthing: ".syncthing.note.md.tmp", "~syncthing~note.md.tmp"
//   - a sync tool's conflict copy (see IsConflictCopy)
//   - iCloud placeholders: ".note.md.icloud"
//   - generic temp and backup suffixes: ".tmp", ".bak", ".orig", ".part",
//     ".crdownload"
//   - Office/LibreOffice lock files: "~$note.md", ".~lock.note.md#"
//   - macOS resource forks: "._note.md"
func isArtefact(name string) bool {
	switch {
	case name == "4913":
		return true
	case strings.HasPrefix(name, ".#"), strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#"),
		strings.HasPrefix(name, "~$"), strings.HasPrefix(name, ".~lock."),
		strings.HasPrefix(name, "._"):
		return true
	case strings.HasPrefix(name, ".syncthing.") || strings.HasPrefix(name, "~syncthing~"):
		return true
	case IsConflictCopy(name):
		return true
	case strings.HasSuffix(name, "~"):
		return true
	case strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".icloud"):
		return true
	}
	ext := strings.ToLower(path.Ext(name))
	switch ext {
	case ".tmp", ".bak", ".orig", ".part", ".crdownload", ".icloud":
		return true
	}
	// vim swap files: .swp, .swo, .swn … .swa and .sw[a-p]/.sx? variants.
	if len(ext) == 4 && (strings.HasPrefix(ext, ".sw") || strings.HasPrefix(ext, ".sx")) {
		return true
	}
	return false
}

// IsConflictCopy reports whether a base name is a copy that a sync tool
// made of a file both devices changed: Syncthing's
// "note.sync-conflict-20260101-120000-ABCDEFG.md", and Dropbox's and
// Nextcloud's "note (conflicted copy 2026-01-01 120000).md" or
// "note (Ada's conflicted copy 2026-01-01).md". Such a copy is never a
// strand: the user decides what to keep.
func IsConflictCopy(name string) bool {
	if strings.HasPrefix(name, ".syncthing.") || strings.HasPrefix(name, "~syncthing~") || strings.HasSuffix(name, ".tmp") {
		return false // a sync tool's file being downloaded, not yet a copy
	}
	if strings.Contains(name, ".sync-conflict-") {
		return true
	}
	stem := strings.TrimSuffix(name, path.Ext(name))
	open := strings.LastIndex(stem, " (")
	return open >= 0 && strings.HasSuffix(stem, ")") && strings.Contains(stem[open:], "conflicted copy")
}
