package ignore

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/knotd/knotd/internal/strand"
)

// defaultConfigDir is the name of Obsidian's config folder unless the user
// renamed it in Obsidian's settings.
const defaultConfigDir = ".obsidian"

// VaultMarker is the folder that makes a directory a vault (knotd's
// .knot, strand.StateDir). A walk never enters a directory below its root
// that has one: it is a vault of its own, which its own knotd answers, so
// that two knotd never answer one note.
const VaultMarker = strand.StateDir

// ignoreFileNames are the ignore files read in every directory, in
// increasing priority: a .knotignore line beats a .ignore line, which beats
// a .gitignore line, in the same directory.
var ignoreFileNames = [...]string{".gitignore", ".ignore", ".knotignore"}

// IsFile reports whether a base name is one of the ignore files
// (.gitignore, .ignore, .knotignore): a change to one changes the rules of
// its directory.
func IsFile(name string) bool {
	return ignoreFileIndex(name) >= 0
}

func ignoreFileIndex(name string) int {
	for i, n := range ignoreFileNames {
		if n == name {
			return i
		}
	}
	return -1
}

// Rules decides which vault-relative paths knotd ignores. A directory is
// ignored if it is a built-in one (any dot-directory such as .git, .knot,
// .obsidian, .trash, .stversions or .stfolder; node_modules; the Obsidian
// config folder under its configured name), or if the ignore files
// (.gitignore, .ignore, .knotignore, in the directory or any ancestor up to
// the vault root) or Patterns exclude it, with gitignore semantics. Nothing
// inside an ignored directory can be re-included.
//
// The zero value is ready to use: built-in ignores only, until ignore files
// are loaded (Load or Walk). Set ConfigDir and Patterns
// before first use and do not change them afterwards. A Rules is safe for
// concurrent use; loading ignore files while another goroutine asks
// Ignored is fine.
type Rules struct {
	// ConfigDir is the name (one path element, not a path) of Obsidian's
	// config folder (".obsidian" when empty). Obsidian lets users
	// rename it; a directory of that name is ignored at any depth, even if
	// the name does not start with a dot.
	ConfigDir string
	// Patterns are extra gitignore-syntax patterns, relative to the vault
	// root, from knotd's configuration. They have the lowest priority: a
	// negation in an ignore file can override them.
	Patterns []string

	once  sync.Once
	extra []pattern

	mu   sync.RWMutex
	dirs map[string]*dirRules // vault-relative directory ("" for the root) → its ignore files
}

// dirRules holds the patterns of one directory's ignore files.
type dirRules struct {
	files [len(ignoreFileNames)][]pattern
	all   []pattern // files in increasing priority
}

// setFile replaces the patterns of the ignore file name (".gitignore",
// ".ignore" or ".knotignore") in the vault-relative directory dir ("" for
// the vault root) with those parsed from data; nil data removes them. It is
// how Load and Walk feed what they read, and how tests feed patterns
// without a file system.
func (r *Rules) setFile(dir, name string, data []byte) error {
	i := ignoreFileIndex(name)
	if i < 0 {
		return fmt.Errorf("ignore: %q is not an ignore file name", name)
	}
	if dir != "" {
		if err := strand.ValidateRel(dir); err != nil {
			return fmt.Errorf("ignore: ignore file directory: %w", err)
		}
	}
	ps := parseIgnoreFile(path.Join(dir, name), data)

	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.dirs[dir]
	if d == nil {
		if len(ps) == 0 {
			return nil
		}
		if r.dirs == nil {
			r.dirs = make(map[string]*dirRules)
		}
		d = &dirRules{}
		r.dirs[dir] = d
	}
	d.files[i] = ps
	d.all = d.all[:0:0]
	for _, f := range d.files {
		d.all = append(d.all, f...)
	}
	if len(d.all) == 0 {
		delete(r.dirs, dir)
	}
	return nil
}

// Forget drops the ignore files read in the vault-relative directory dir
// and in every directory below it ("" for all of them), for a directory
// that is gone or now ignored; Load or Walk read them again.
func (r *Rules) Forget(dir string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range r.dirs {
		if strand.Within(d, dir) {
			delete(r.dirs, d)
		}
	}
}

// parseIgnoreFile parses the lines of an ignore file; src names the file
// in Explain's reasons.
func parseIgnoreFile(src string, data []byte) []pattern {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var ps []pattern
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		p, ok := parsePattern(line)
		if !ok {
			continue
		}
		p.src, p.line = src, n+1
		ps = append(ps, p)
	}
	return ps
}

func (r *Rules) configDir() string {
	if r.ConfigDir == "" {
		return defaultConfigDir
	}
	return r.ConfigDir
}

func (r *Rules) extraPatterns() []pattern {
	r.once.Do(func() {
		for i, line := range r.Patterns {
			if p, ok := parsePattern(line); ok {
				p.src, p.line = "knotd config ignore", i+1
				r.extra = append(r.extra, p)
			}
		}
	})
	return r.extra
}

// builtin says why a directory named name is always ignored, or "".
func (r *Rules) builtin(name string) string {
	switch name {
	case r.configDir(), defaultConfigDir:
		return "Obsidian config folder"
	case ".git":
		return "git repository data"
	case VaultMarker:
		return "knotd's folder"
	case ".trash":
		return "Obsidian trash folder"
	case ".stversions":
		return "Syncthing versions folder"
	case ".stfolder":
		return "Syncthing folder marker"
	case "node_modules":
		return "node_modules folder"
	}
	if strings.HasPrefix(name, ".") {
		return "dot-directory"
	}
	return ""
}

// Ignored reports whether the vault-relative slash path rel is ignored;
// isDir says whether rel is a directory. A path inside an ignored directory
// is ignored. A path strand.ValidateRel rejects (absolute, with a volume
// name such as "C:", a backslash, or "..", "." or empty elements) is
// reported as ignored.
func (r *Rules) Ignored(rel string, isDir bool) bool {
	if strand.ValidateRel(rel) != nil {
		return true
	}
	return r.check(rel, isDir, false).ignored
}

// ignoredEntry is Ignored for an entry whose parent directory is known not
// to be ignored: only the last element is checked, against the rules.
func (r *Rules) ignoredEntry(rel string, isDir bool) bool {
	return strand.ValidateRel(rel) != nil || r.check(rel, isDir, true).ignored
}

// Explain says whether the vault-relative slash path rel is ignored, and
// why, in words for a person: for example
//
//	ignored by notes/.gitignore:3 pattern "drafts/" (matches directory notes/drafts)
//	ignored: inside .obsidian (Obsidian config folder)
//	not ignored: re-included by .gitignore:5 pattern "!keep.md"
//
// A trailing slash marks rel as a directory ("notes/drafts/"); without it
// rel is taken to be a file. Explain only knows the ignore files loaded so
// far: call Load first for a path nobody walked.
func (r *Rules) Explain(rel string) (ignored bool, reason string) {
	isDir := strings.HasSuffix(rel, "/")
	rel = strings.TrimSuffix(rel, "/")
	if rel == "" || rel == "." {
		return false, "not ignored: the vault root"
	}
	if err := strand.ValidateRel(rel); err != nil {
		return true, "ignored: not a vault-relative path: " + err.Error()
	}
	v := r.check(rel, isDir, false)
	return v.ignored, v.reason(rel)
}

// verdict is the outcome of checking one path.
type verdict struct {
	ignored bool
	at      string   // the path (rel or an ancestor directory) the decision was made on
	why     string   // a built-in reason, or ""
	p       *pattern // the deciding pattern, or nil
}

func (v verdict) reason(rel string) string {
	switch {
	case v.why != "" && v.at == rel:
		return fmt.Sprintf("ignored: %s (%s)", v.at, v.why)
	case v.why != "":
		return fmt.Sprintf("ignored: inside %s (%s)", v.at, v.why)
	case v.ignored && v.at == rel:
		return fmt.Sprintf("ignored by %s:%d pattern %q", v.p.src, v.p.line, v.p.text)
	case v.ignored:
		return fmt.Sprintf("ignored by %s:%d pattern %q (matches directory %s)", v.p.src, v.p.line, v.p.text, v.at)
	case v.p != nil:
		return fmt.Sprintf("not ignored: re-included by %s:%d pattern %q", v.p.src, v.p.line, v.p.text)
	}
	return "not ignored"
}

// ancestorRules is a directory that has ignore files, by depth.
type ancestorRules struct {
	depth int // number of path elements of the directory
	d     *dirRules
}

// check decides rel. Each ancestor directory is checked first, from the
// top, because nothing inside an excluded directory can be re-included;
// lastOnly skips that when the caller knows the parent is not ignored.
func (r *Rules) check(rel string, isDir, lastOnly bool) verdict {
	var ebuf [32]string
	elems := splitPath(ebuf[:0], rel)
	n := len(elems)
	extra := r.extraPatterns()

	r.mu.RLock()
	defer r.mu.RUnlock()
	var buf [16]ancestorRules
	anc := buf[:0]
	if len(r.dirs) > 0 {
		end := 0
		for j := 0; j < n; j++ { // the directory of the first j elements
			if j > 0 {
				end += len(elems[j-1])
				if j > 1 {
					end++
				}
			}
			if d := r.dirs[rel[:end]]; d != nil {
				anc = append(anc, ancestorRules{j, d})
			}
		}
	}

	start := 1
	if lastOnly {
		start = n
	}
	var last verdict
	for k := start; k <= n; k++ {
		dir := k < n || isDir
		at := prefix(rel, elems, k)
		if dir {
			if why := r.builtin(elems[k-1]); why != "" {
				return verdict{ignored: true, at: at, why: why}
			}
		}
		p := decide(anc, extra, elems, k, dir)
		if p != nil && !p.negate {
			return verdict{ignored: true, at: at, p: p}
		}
		last = verdict{at: at, p: p}
	}
	return last
}

// decide returns the highest-priority pattern matching the first k
// elements, or nil: deeper ignore files first, later lines first, the
// configured patterns last.
func decide(anc []ancestorRules, extra []pattern, elems []string, k int, dir bool) *pattern {
	for a := len(anc) - 1; a >= 0; a-- {
		j := anc[a].depth
		if j >= k {
			continue
		}
		ps := anc[a].d.all
		for i := len(ps) - 1; i >= 0; i-- {
			if ps[i].match(elems[j:k], dir) {
				return &ps[i]
			}
		}
	}
	for i := len(extra) - 1; i >= 0; i-- {
		if extra[i].match(elems[:k], dir) {
			return &extra[i]
		}
	}
	return nil
}

// splitPath appends the elements of rel to buf, avoiding an allocation for
// paths of ordinary depth.
func splitPath(buf []string, rel string) []string {
	for {
		i := strings.IndexByte(rel, '/')
		if i < 0 {
			return append(buf, rel)
		}
		buf = append(buf, rel[:i])
		rel = rel[i+1:]
	}
}

// prefix returns the first k elements of rel as a path.
func prefix(rel string, elems []string, k int) string {
	if k == len(elems) {
		return rel
	}
	end := k - 1
	for _, e := range elems[:k] {
		end += len(e)
	}
	return rel[:end]
}
