package tieoff

import (
	"path"
	"strings"

	"github.com/knotd/knotd/internal/strand"
)

// ConflictOf reports whether name, a base name or a slash-separated path,
// is a sync tool's conflict copy of a tie-off, and returns the name of
// that tie-off, in the same directory. It knows two forms:
//
//   - Syncthing's "<stem>.sync-conflict-<YYYYMMDD>-<HHMMSS>-<ID>.<ext>",
//     where ID is 7 upper-case base32 characters ([A-Z2-7]) and the
//     original is "<stem>.<ext>". Syncthing inserts before the last
//     extension only, so the copy of "x.tieoff.md" is
//     "x.tieoff.sync-conflict-20261123-120000-ABCDEFG.md".
//   - Dropbox's and Nextcloud's "<stem> (<...> conflicted copy<...>).<ext>",
//     for example "x.tieoff (conflicted copy 2026-11-23 120000).md" or
//     "x.tieoff (Ada's conflicted copy 2026-11-23).md", where the original
//     is "<stem>.<ext>".
//
// It returns false for anything whose original is not a tie-off (see
// strand.IsTieOff): a conflict copy of a note is not its business, nor is
// the tie-off of such a copy ("x.sync-conflict-20261123-120000-ABCDEFG.tieoff.md"
// belongs to the note "x.sync-conflict-20261123-120000-ABCDEFG.md"). A
// conflict copy of a conflict copy of a tie-off names the tie-off itself.
func ConflictOf(name string) (original string, ok bool) {
	dir, base := path.Split(name)
	for range 8 { // a copy of a copy of ...; names are short
		orig, ok := syncthingOriginal(base)
		if !ok {
			orig, ok = dropboxOriginal(base)
		}
		if !ok {
			break
		}
		if strand.IsTieOff(orig) {
			return dir + orig, true
		}
		base = orig
	}
	return "", false
}

// syncthingInfix is what Syncthing puts before the date in a conflict
// copy's name.
const syncthingInfix = ".sync-conflict-"

// syncthingOriginal returns the name a Syncthing conflict copy named base
// was made from: base without ".sync-conflict-YYYYMMDD-HHMMSS-ID", which
// must come just before the last extension or at the end.
func syncthingOriginal(base string) (string, bool) {
	i := strings.LastIndex(base, syncthingInfix)
	if i <= 0 {
		return "", false
	}
	rest := base[i+len(syncthingInfix):]
	const stamp = len("YYYYMMDD-HHMMSS-ABCDEFG")
	if len(rest) < stamp ||
		!allBytes(rest[0:8], isDigit) || rest[8] != '-' ||
		!allBytes(rest[9:15], isDigit) || rest[15] != '-' ||
		!allBytes(rest[16:23], isBase32) {
		return "", false
	}
	ext := rest[stamp:]
	if ext != "" && (ext[0] != '.' || strings.Contains(ext[1:], ".")) {
		return "", false
	}
	return base[:i] + ext, true
}

// dropboxOriginal returns the name a Dropbox or Nextcloud conflict copy
// named base was made from: base without " (... conflicted copy ...)"
// before its extension. The parenthesised text may itself hold " (" (a
// device named "Ada (work)"), so every opening is tried, the last first,
// and the first whose original is a tie-off wins.
func dropboxOriginal(base string) (string, bool) {
	ext := path.Ext(base)
	stem := base[:len(base)-len(ext)]
	if !strings.HasSuffix(stem, ")") {
		return "", false
	}
	var first string
	for j := strings.LastIndex(stem, " ("); j > 0; j = strings.LastIndex(stem[:j], " (") {
		inside := stem[j+2 : len(stem)-1]
		if !strings.HasPrefix(inside, "conflicted copy") && !strings.Contains(inside, " conflicted copy") {
			continue
		}
		orig := stem[:j] + ext
		if strand.IsTieOff(orig) {
			return orig, true
		}
		if first == "" {
			first = orig
		}
	}
	return first, first != ""
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isBase32 reports whether c is in the alphabet of RFC 4648 base32, upper
// case, as Syncthing writes device ids.
func isBase32(c byte) bool { return 'A' <= c && c <= 'Z' || '2' <= c && c <= '7' }
