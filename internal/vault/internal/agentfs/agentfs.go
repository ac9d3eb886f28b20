// Package agentfs is the file system knotd offers the agent of one run
// through ACP (agentrun.FileSystem): reads and writes inside the vault
// root, refused for what the user keeps from agents, and writes that
// never replace a save of the user's. What it needs of the vault (its
// limits, log, ignore rules, rules, and the settling of a replace's
// guard) is Host.
package agentfs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/vaultfs"
)

// Host is what the agent's file system asks of the vault, each time it
// needs it (a reload changes the configuration; a test, the logger).
type Host interface {
	// MaxSize is limits.max_strand_size: every read and write is bounded
	// by it.
	MaxSize() int64
	// Log is where the file system says what the agent wrote.
	Log() *slog.Logger
	// Ignored reports whether the ignore rules keep rel, and why, once it
	// has read the ignore files on the way to it.
	Ignored(rel string) (ignored bool, why string, err error)
	// LinkedDir returns the first folder on the way to rel that is a
	// symbolic link (linked), or a vault of its own (nested); "" for none.
	LinkedDir(rel string) (linked, nested string, err error)
	// KeptFromAgents reports whether the configuration's rules or
	// Obsidian's Excluded files keep rel from every agent, and why.
	KeptFromAgents(rel string) (kept bool, why string)
	// SettleGuard settles g, the guard of a replace of rel, and reports
	// whether the file holds more than what was written (or that is not
	// known).
	SettleGuard(rel string, g *vaultfs.Guard) bool
}

// Options are what the file system knows of the vault and the run when
// it is made.
type Options struct {
	FS          *os.Root             // the vault
	Root        string               // the vault's absolute path
	Dry         bool                 // --dry-run: nothing is written
	Permissions agentrun.Permissions // the run's permission level
}

// FS is the file system knotd offers the agent of one run through ACP
// (agentrun.FileSystem): every call is resolved inside the vault root,
// never through a link, and refused for what the user keeps from agents
// (ignored paths, rules with mode: off, Obsidian's Excluded files, knotd's
// own .knot folder). It writes only at the permission levels edit, full
// and ask (where agentrun lets through only the writes, and the requests
// for permission, of an edit the user approved), never a tie-off or an ignore file, and every write of an existing
// file goes through the race-safe replace knotd's own writes use: a save
// the user made since the agent read the file, or while it writes, is
// kept and the agent's write refused. An agent that writes a file it did
// not read through knotd (it read it with its own tools, as OpenCode
// does, or not at all) may have read an older version: its write of a
// file that changed while it ran is refused as well. The same checks
// answer the agent's requests for permission to edit files (MayEdit),
// which it may then write with its own tools, past this file system.
//
// Every read and write is bounded by limits.max_strand_size.
//
// An agent that edits the strand it answers changes it like anyone else:
// the watcher sees the change and the strand runs again; the breakers
// bound an agent that edits its note on every run.
type FS struct {
	host  Host
	fs    *os.Root
	root  string
	dry   bool
	write bool // the run's permission level lets the agent write
	full  bool // the run's permission level is full
	// start is when the run began, less ChangeSlack: a file whose change
	// time is later changed while the agent ran.
	start time.Time
	// Lstat, when set (by tests), is the vault root's Lstat
	// (slash-separated names); the tests make it fold case, as macOS's and
	// Windows's file systems do.
	Lstat func(name string) (fs.FileInfo, error)

	mu   sync.Mutex
	seen map[string]state.Hash // rel → the content the agent last read or wrote
	// granted holds the files knotd granted the agent an edit of (MayEdit).
	granted map[string]bool
	guards  []agentGuard // the replaces' guards, settled by close
	closed  bool

	// BeforeReplace, when set (by tests), runs between a write's read of
	// the file rel and its replace: where a save races the write.
	BeforeReplace func(rel string)
}

// agentGuard is the guard of a replace of the file rel.
type agentGuard struct {
	rel string
	g   *vaultfs.Guard
}

var _ agentrun.FileSystem = (*FS)(nil)

// New returns the file system of a run in the vault host, with options o.
func New(host Host, o Options) *FS {
	p := o.Permissions
	return &FS{host: host, fs: o.FS, root: o.Root, dry: o.Dry,
		write: p == agentrun.PermEdit || p == agentrun.PermFull || p == agentrun.PermAsk, full: p == agentrun.PermFull, seen: map[string]state.Hash{},
		granted: map[string]bool{}, start: time.Now().Add(-ChangeSlack)}
}

// ChangeSlack is how far before the run's start a file's change time may
// lie and still be a change made while the agent ran: file systems stamp
// a change from a clock that lags behind time.Now by up to a clock tick
// (Linux: a jiffy, at most 10ms).
const ChangeSlack = 20 * time.Millisecond

// ChangedSince reports whether the file fi describes was changed (written,
// or renamed into place) at t or later, as its status change time says,
// or its modification time where there is none (Windows).
func ChangedSince(fi fs.FileInfo, t time.Time) bool {
	st := state.StampOf(fi)
	return max(st.ModTime, st.Ctime) >= t.UnixNano()
}

// refused is the error of a call the vault refuses.
func refused(format string, args ...any) error {
	return fmt.Errorf("refused: "+format, args...)
}

// errAgentFSClosed refuses a call that comes after its run.
var errAgentFSClosed = errors.New("refused: the run is over")

// ReadTextFile returns the text of the file at the absolute path p, from
// the 1-based line (0: the first) and at most limit lines (0: all).
func (a *FS) ReadTextFile(ctx context.Context, p string, line, limit int) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rel, err := a.resolve(p)
	if err != nil {
		return "", err
	}
	data, _, err := a.readFile(rel, a.host.MaxSize())
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return "", errAgentFSClosed
	}
	a.seen[rel] = state.HashOf(data)
	a.mu.Unlock()
	return lines(string(data), line, limit), nil
}

// readFile reads the file rel, refusing what is not a text file, and
// returns what fstat said of it.
func (a *FS) readFile(rel string, limit int64) ([]byte, fs.FileInfo, error) {
	data, fi, err := vaultfs.ReadFile(a.fs, rel, limit)
	for try := 1; errors.Is(err, vaultfs.ErrReplaced) && try < 3; try++ {
		// Saved by a rename as it was opened: read the new file.
		data, fi, err = vaultfs.ReadFile(a.fs, rel, limit)
	}
	var pe *fs.PathError
	switch {
	case errors.Is(err, vaultfs.ErrReplaced):
		return nil, nil, refused("%s keeps being replaced (saved) as knotd opens it; the user's save is kept: try again", rel)
	case errors.Is(err, fs.ErrNotExist) || vaultfs.IsNotDir(err):
		return nil, nil, fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
	case errors.Is(err, vaultfs.ErrNotRegular) && errors.As(err, &pe):
		return nil, nil, refused("%s is %v: knotd reads and writes only regular files", rel, pe.Err)
	case errors.Is(err, vaultfs.ErrTooLarge):
		return nil, nil, refused("%s is larger than limits.max_strand_size (%s)", rel, config.FormatSize(limit))
	case err != nil:
		return nil, nil, fmt.Errorf("%s: %w", rel, err)
	}
	if !utf8.Valid(data) || strings.IndexByte(string(data), 0) >= 0 {
		return nil, nil, refused("%s is not a text file (NUL bytes, or not UTF-8)", rel)
	}
	return data, fi, nil
}

// lines returns the text from the 1-based line (below 1: the first) and
// at most limit lines (below 1: all of them), line endings kept.
func lines(text string, line, limit int) string {
	if line <= 1 && limit <= 0 {
		return text
	}
	start := 0
	for n := 1; n < line; n++ {
		i := strings.IndexByte(text[start:], '\n')
		if i < 0 {
			return ""
		}
		start += i + 1
	}
	if limit <= 0 {
		return text[start:]
	}
	end := start
	for range limit {
		i := strings.IndexByte(text[end:], '\n')
		if i < 0 {
			return text[start:]
		}
		end += i + 1
	}
	return text[start:end]
}

// WriteTextFile writes content to the file at the absolute path p: an
// existing file is replaced, unless the user saved it since the agent
// read it or while it writes; a new file (and its folders) is created.
func (a *FS) WriteTextFile(ctx context.Context, p, content string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rel, err := a.writable(p)
	if err != nil {
		return err
	}
	limit := a.host.MaxSize()
	if int64(len(content)) > limit {
		return refused("%d bytes are more than limits.max_strand_size (%s)", len(content), config.FormatSize(limit))
	}

	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errAgentFSClosed
	}
	// An earlier write's guard first: a save that went into the file it
	// replaced is back before this write compares the file.
	a.settle(rel)
	current, fi, err := a.readFile(rel, limit)
	if errors.Is(err, fs.ErrNotExist) {
		fi, err = nil, nil
	}
	if err != nil {
		return err
	}
	if err := a.userSaved(rel, current, fi, &content); err != nil {
		return err
	}
	switch {
	case fi == nil:
		if err := a.create(rel, []byte(content)); err != nil {
			return err
		}
	case string(current) == content:
		// Nothing to write.
	default:
		if a.BeforeReplace != nil {
			a.BeforeReplace(rel)
		}
		g, err := vaultfs.ReplaceIfUnchanged(a.fs, rel, current, []byte(content), vaultfs.ReplaceOptions{})
		if g != nil {
			a.guards = append(a.guards, agentGuard{rel, g})
		}
		switch {
		case errors.Is(err, vaultfs.ErrChanged) && a.holds(rel, content, limit):
			// Written meanwhile with what the agent writes (OpenCode writes
			// with its own tool as well): nothing is lost.
		case errors.Is(err, vaultfs.ErrChanged):
			return refused("%s changed while the agent wrote it; the user's save is kept", rel)
		case errors.Is(err, vaultfs.ErrNotRegular):
			return refused("%s is not a regular file: knotd reads and writes only regular files", rel)
		case err != nil:
			return fmt.Errorf("%s: %w", rel, err)
		}
	}
	a.seen[rel] = state.HashOf([]byte(content))
	a.host.Log().Info("an agent wrote a file through knotd", "file", rel, "bytes", len(content))
	return nil
}

// holds reports whether the file rel now holds content.
func (a *FS) holds(rel, content string, limit int64) bool {
	now, _, err := a.readFile(rel, limit)
	return err == nil && string(now) == content
}

// writable returns the vault-relative path of the absolute path p when
// the agent may write there, or says why not.
func (a *FS) writable(p string) (string, error) {
	if !a.write {
		return "", refused("writes need permissions: edit or full")
	}
	if a.dry {
		return "", refused("knotd runs with --dry-run: nothing is written")
	}
	rel, err := a.resolve(p)
	if err != nil {
		return "", err
	}
	// In any case: on a file system that folds case, a new A.TIEOFF.md is
	// the tie-off knotd later writes as a.tieoff.md.
	base := strings.ToLower(path.Base(rel))
	switch {
	case strand.IsTieOff(strings.ToLower(rel)):
		return "", refused("%s is a tie-off: knotd writes it, agents may only read it", rel)
	case ignore.IsFile(base):
		return "", refused("%s is an ignore file: it decides what agents may read, and only the user changes it", rel)
	case strings.Contains(base, vaultfs.TempInfix) && strings.HasSuffix(base, vaultfs.TempSuffix):
		return "", refused("knotd's own files (%s is one of its temporary files)", rel)
	}
	return rel, nil
}

// userSaved says why a write of the file rel by the agent would lose a
// save of the user's (nil: it would not), the file being current as fi
// describes it (fi nil: it does not exist). content is what the agent
// writes, nil when knotd does not know (a permission to edit): a write of
// what the file holds loses nothing. The caller holds a.mu.
func (a *FS) userSaved(rel string, current []byte, fi fs.FileInfo, content *string) error {
	seen, read := a.seen[rel]
	switch {
	case fi == nil:
		if read {
			return refused("%s was deleted since the agent read it; the deletion is kept", rel)
		}
	case read && state.HashOf(current) != seen:
		return refused("%s changed since the agent read it (the user saved it); the user's save is kept: read it again", rel)
	case content != nil && string(current) == *content:
	case !read && ChangedSince(fi, a.start):
		// Read with the agent's own tools, or not at all: before or after
		// the save, knotd cannot tell.
		return refused("%s changed while the agent ran (the user saved it) and the agent did not read it through knotd; the user's save is kept: read it (fs/read_text_file), then write", rel)
	}
	return nil
}

// MayEdit says why knotd refuses the agent's request for permission to
// edit (or delete, or move) the files at paths, which it may then write
// with its own tools, past knotd (nil: knotd may grant it): the same
// refusals as a write's (permissions, the vault's rules, tie-offs; none at
// permissions full, which allows everything), and a file that changed since the agent read it through knotd, or while it ran
// when it did not, holds a save of the user's that the edit would lose. A
// file knotd granted an edit of before may hold the agent's own write,
// which knotd cannot tell from a user's save by its change time: unless
// the agent read or wrote it through knotd since (then its content is
// compared with what the agent last read or wrote), its later edits are
// granted.
func (a *FS) MayEdit(ctx context.Context, paths []string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rels := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, err := a.writable(p)
		if err != nil {
			if a.full {
				// full allows everything: only a user's save in the vault
				// is kept.
				continue
			}
			return err
		}
		rels = append(rels, rel)
	}
	limit := a.host.MaxSize()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errAgentFSClosed
	}
	for _, rel := range rels {
		a.settle(rel)
		current, fi, err := a.readFile(rel, limit)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fi = nil
		case err != nil:
			// A regular file knotd does not read (too large, not text):
			// its change time alone says whether the user saved it.
			li, lerr := a.fs.Lstat(filepath.FromSlash(rel))
			if lerr != nil || !li.Mode().IsRegular() {
				return err
			}
			current, fi = nil, li
		}
		if err := a.userSaved(rel, current, fi, nil); err != nil {
			if _, read := a.seen[rel]; !read && fi != nil && a.granted[rel] {
				// Changed since knotd granted an edit of it, maybe by
				// the agent's own write: knotd cannot tell.
				continue
			}
			return err
		}
	}
	for _, rel := range rels {
		a.granted[rel] = true
	}
	return nil
}

// create creates the new file rel with data, and the folders on its way,
// inside the vault root and never through a link: a file that appears
// meanwhile is left alone and the write refused.
func (a *FS) create(rel string, data []byte) (err error) {
	dir := path.Dir(rel)
	if dir != "." {
		if err := a.mkdirs(dir); err != nil {
			return err
		}
	}
	f, _, err := vaultfs.OpenWrite(a.fs, rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return refused("%s was created while the agent wrote it; it is kept", rel)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", rel, err)
	}
	defer func() {
		if err != nil {
			// Only the agent's own half-written file goes.
			if rerr := a.fs.Remove(filepath.FromSlash(rel)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("remove the half-written %s: %w", rel, rerr))
			}
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close() // the write's error is the one to report
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close() // the sync's error is the one to report
		return fmt.Errorf("sync %s: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", rel, err)
	}
	if err := vaultfs.SyncDir(a.fs, dir); err != nil {
		a.host.Log().Warn("cannot sync the folder of a file an agent created; a crash now may lose it", "file", rel, "err", err)
	}
	return nil
}

// mkdirs creates the folder dir and those on its way that are missing,
// one at a time, refusing a link or a file on the way.
func (a *FS) mkdirs(dir string) error {
	elems := strings.Split(dir, "/")
	for k := 1; k <= len(elems); k++ {
		d := strings.Join(elems[:k], "/")
		osd := filepath.FromSlash(d)
		fi, err := a.fs.Lstat(osd)
		if errors.Is(err, fs.ErrNotExist) {
			err = a.fs.Mkdir(osd, 0o755)
			if errors.Is(err, fs.ErrExist) {
				fi, err = a.fs.Lstat(osd) // someone made it meanwhile
			} else if err == nil {
				continue
			}
		}
		switch {
		case err != nil:
			return fmt.Errorf("create the folder %s: %w", d, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return refused("%s is a symbolic link: knotd never writes through one", d)
		case !fi.IsDir():
			return refused("%s is not a folder", d)
		}
	}
	return nil
}

// resolve maps the absolute path p an agent sent to a vault-relative one
// that the agent may use, or says why not.
func (a *FS) resolve(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", refused("%q is not an absolute path", p)
	}
	for _, el := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if el == ".." {
			return "", refused("%q has a .. element", p)
		}
	}
	rel, ok := a.rel(filepath.Clean(p))
	if !ok {
		return "", refused("%s is outside the vault", p)
	}
	if rel == "" {
		return "", refused("the vault root is a folder")
	}
	if err := strand.ValidateRel(rel); err != nil {
		return "", refused("%v", err)
	}
	// Checked as the files are named on disk: where the file system folds
	// case (macOS, Windows), PRIVATE/p.md is private/p.md, which a rule
	// keeps from agents.
	rel, err := a.onDisk(rel)
	if err != nil {
		return "", err
	}
	if first, _, _ := strings.Cut(rel, "/"); strings.EqualFold(first, strand.StateDir) {
		return "", refused("knotd's own files (%s)", strand.StateDir)
	}
	ign, why, err := a.host.Ignored(rel)
	if err != nil {
		return "", refused("cannot read the ignore files on the way to %s: %v", rel, err)
	}
	if ign {
		return "", refused("%s is %s", rel, why)
	}
	linked, nested, err := a.host.LinkedDir(rel)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: %w", rel, err)
	case nested != "":
		return "", refused("%s is inside %s, a vault of its own", rel, nested)
	case linked != "":
		return "", refused("%s is below %s, a symbolic link to a folder: knotd never follows it", rel, linked)
	}
	if kept, why := a.host.KeptFromAgents(rel); kept {
		return "", refused("%s is kept from agents: %s", rel, why)
	}
	return rel, nil
}

// onDisk returns rel with each of its elements that exists spelled as its
// folder lists it: on a file system that folds case (or Unicode
// normalization, macOS), a name the agent spells otherwise reaches the same
// file, and the rules must see the name they were written for. What does
// not exist stays as the agent spelled it.
func (a *FS) onDisk(rel string) (string, error) {
	lstat := a.Lstat
	if lstat == nil {
		lstat = func(name string) (fs.FileInfo, error) { return a.fs.Lstat(filepath.FromSlash(name)) }
	}
	elems := strings.Split(rel, "/")
	for k, el := range elems {
		dir := strings.Join(elems[:k], "/")
		fi, err := lstat(path.Join(dir, el))
		if errors.Is(err, fs.ErrNotExist) || vaultfs.IsNotDir(err) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", rel, err)
		}
		d, err := a.fs.Open(filepath.FromSlash(cmp.Or(dir, ".")))
		if err != nil {
			return "", fmt.Errorf("%s: list its folder: %w", rel, err)
		}
		names, err := d.Readdirnames(-1)
		_ = d.Close() // read only
		if err != nil {
			return "", fmt.Errorf("%s: list its folder: %w", rel, err)
		}
		if slices.Contains(names, el) {
			if !fi.IsDir() {
				break // a link or a file: the checks below say what it is
			}
			continue
		}
		// The names that differ in case first, then the others (another
		// Unicode normalization): the one that is the same file.
		slices.SortStableFunc(names, func(x, y string) int {
			return cmp.Compare(b2i(!strings.EqualFold(x, el)), b2i(!strings.EqualFold(y, el)))
		})
		found := false
		for _, n := range names {
			if ni, err := lstat(path.Join(dir, n)); err == nil && os.SameFile(ni, fi) {
				elems[k], found = n, true
				break
			}
		}
		if !found {
			return "", refused("%s reaches a file that its folder lists by no name knotd can match", rel)
		}
		if !fi.IsDir() {
			break // a link or a file: the checks below say what it is
		}
	}
	return strings.Join(elems, "/"), nil
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rel returns the slash-separated path of the clean absolute path p
// relative to the vault root ("" for the root itself), also when p
// reaches the root by another name (a symbolic link to it, or one of the
// folders above it); ok is false when p is outside the vault.
func (a *FS) rel(p string) (string, bool) {
	if rel, ok := within(a.root, p); ok {
		return rel, true
	}
	rootInfo, err := os.Stat(a.root)
	if err != nil {
		return "", false
	}
	for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil && os.SameFile(fi, rootInfo) {
			return within(dir, p)
		}
		if filepath.Dir(dir) == dir {
			return "", false
		}
	}
}

// within returns p relative to dir when p is dir or lies below it.
func within(dir, p string) (string, bool) {
	r, err := filepath.Rel(dir, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	if r == "." {
		return "", true
	}
	return filepath.ToSlash(r), true
}

// settle settles the guards of the earlier writes of rel ("" for all).
// The caller holds a.mu.
func (a *FS) settle(rel string) {
	kept := a.guards[:0]
	for _, g := range a.guards {
		if rel != "" && g.rel != rel {
			kept = append(kept, g)
			continue
		}
		if a.host.SettleGuard(g.rel, g.g) {
			// The file holds a save the agent has not read: its next
			// write is refused until it reads the file again.
			a.seen[g.rel] = state.Hash{}
		}
	}
	a.guards = kept
}

// Close ends the file system at the end of its run: the guards of its
// writes are settled, and later calls are refused.
func (a *FS) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.settle("")
	a.closed = true
}
