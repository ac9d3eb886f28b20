package ignore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/knotd/knotd/internal/strand"
)

// maxIgnoreFileSize bounds what is read of one ignore file; a larger file
// is an error rather than a memory hazard.
const maxIgnoreFileSize = 1 << 20

// Load reads the ignore files of the vault root and of every directory
// between it and rel (not rel's own: they only concern what is inside
// rel), so that Ignored and Explain see them for a path no walk has
// reached. root is the vault's directory on disk. Ignore files inside an
// ignored directory are never read.
func (r *Rules) Load(root, rel string) error {
	rel = strings.TrimSuffix(rel, "/")
	var errs []error
	collect := func(_ string, err error) { errs = append(errs, err) }
	if r.loadDir(root, "", nil, collect); len(errs) > 0 {
		return errors.Join(errs...)
	}
	if rel == "" || rel == "." {
		return nil
	}
	if err := strand.ValidateRel(rel); err != nil {
		return fmt.Errorf("ignore: load ignore files: %w", err)
	}
	elems := strings.Split(rel, "/")
	for k := 1; k < len(elems); k++ {
		dir := strings.Join(elems[:k], "/")
		if r.Ignored(dir, true) {
			return nil
		}
		if r.loadDir(root, dir, nil, collect); len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	return nil
}

// loadDir (re)reads the ignore files of the vault-relative directory dir.
// When present is not nil it says which names exist (from a listing just
// made), and absent ones are dropped without a system call. A file that
// cannot be read keeps the patterns read before and is passed to onErr.
func (r *Rules) loadDir(root, dir string, present *[len(ignoreFileNames)]bool, onErr func(name string, err error)) {
	for i, name := range ignoreFileNames {
		var data []byte
		if present == nil || present[i] {
			var err error
			data, err = readIgnoreFile(filepath.Join(root, filepath.FromSlash(dir), name))
			if err != nil {
				onErr(name, err)
				continue
			}
		}
		if err := r.setFile(dir, name, data); err != nil {
			onErr(name, err)
		}
	}
}

// readIgnoreFile returns the content of an ignore file, or nil if there is
// none. Ignore files travel with the vault, so they are someone else's
// input: a symbolic link at the name is not followed, a FIFO or device
// never blocks the read, and at most maxIgnoreFileSize bytes are read.
func readIgnoreFile(abs string) (data []byte, err error) {
	f, err := openNoFollow(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ignore: read ignore file: %w", err)
	}
	defer f.Close() // read only: a close error loses nothing
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ignore: read ignore file %s: %w", abs, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("ignore: ignore file %s is not a regular file (%v): knotd reads only a regular file there", abs, fi.Mode().Type())
	}
	data, err = io.ReadAll(io.LimitReader(f, maxIgnoreFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("ignore: read ignore file %s: %w", abs, err)
	}
	if len(data) > maxIgnoreFileSize {
		return nil, fmt.Errorf("ignore: ignore file %s is larger than %d bytes", abs, maxIgnoreFileSize)
	}
	if data == nil {
		data = []byte{} // present but empty: not the same as absent
	}
	return data, nil
}

// Walk walks the vault-relative directory dir ("" for the whole vault)
// under root, the vault's directory on disk, and calls fn for dir and for
// every entry below it that the rules do not ignore, with vault-relative
// slash paths ("" for the root). It reads each directory's ignore files
// before deciding about its entries, so the rules it leaves behind are
// current for everything it walked. It never enters a directory other
// than the vault root that holds a VaultMarker: that is a vault of its
// own.
//
// fn follows the fs.WalkDirFunc protocol of fs.WalkDir: a directory is
// passed before it is read, the entries of one directory come in lexical
// order, returning fs.SkipDir skips a directory (or, from a file, the rest
// of its directory), fs.SkipAll stops the walk, and a directory that
// cannot be read is passed a second time with the error. An ignore file
// that cannot be read is passed with its error. Symbolic links are passed
// as entries and never followed. If dir is itself ignored, fn is never
// called. On Linux, the Info of an entry that is not a directory comes
// from one fstatat(2) relative to its open directory, and its Sys() has
// the methods Ident() (inode, device uint64) and ChangeTime() int64 (the
// status change time in nanoseconds) in place of a *syscall.Stat_t.
func (r *Rules) Walk(root, dir string, o WalkOptions, fn fs.WalkDirFunc) error {
	workers := 0
	if o.Concurrent {
		workers = walkWorkers
	}
	return r.walk(root, dir, o, workers, fn)
}

// walk is Walk listing up to workers directories at once (at most one
// when workers is below 2).
func (r *Rules) walk(root, dir string, o WalkOptions, workers int, fn fs.WalkDirFunc) error {
	if dir != "" {
		if err := strand.ValidateRel(dir); err != nil {
			return fmt.Errorf("ignore: walk: %w", err)
		}
		if !o.AncestorsLoaded {
			if err := r.Load(root, dir); err != nil {
				if err := fn(dir, nil, err); err != nil {
					return skipToNil(err)
				}
			}
		}
		if r.Ignored(dir, true) {
			return nil
		}
	}
	abs := filepath.Join(root, filepath.FromSlash(dir))
	stat := os.Lstat
	if dir == "" {
		stat = os.Stat // the vault root may be a symbolic link to the real folder
	}
	fi, err := stat(abs)
	if err != nil {
		return skipToNil(fn(dir, nil, err))
	}
	w := &walker{root: root, rules: r, fn: fn, listed: o.Listed}
	if workers > 1 {
		w.sem = make(chan struct{}, workers) // the calling goroutine only waits for them
	}
	err = w.visit(dir, fs.FileInfoToDirEntry(fi))
	if err != nil {
		w.fail(err)
	}
	w.wg.Wait()
	return skipToNil(w.err)
}

// WalkOptions are the choices of a Walk; the zero value walks one
// directory at a time in the calling goroutine, reading the ignore files
// above dir first.
type WalkOptions struct {
	// Concurrent lists several directories at once, for large vaults:
	// listing directories and looking at files is most of a walk's cost,
	// and those system calls overlap well. fn is then called from several
	// goroutines at once and must be safe for that; the entries of one
	// directory still come to it in lexical order, but those of different
	// directories interleave. Every goroutine has ended when Walk returns.
	Concurrent bool
	// AncestorsLoaded says that the ignore files of the directories above
	// dir are loaded and current (the watcher keeps them so): Walk does not
	// read them again.
	AncestorsLoaded bool
	// Listed, when set, is told how many entries each directory listing
	// had, ignored ones included (kqueue opens a descriptor for each). It
	// is called from the goroutine that listed the directory.
	Listed func(rel string, n int)
}

// walkWorkers is how many directories a concurrent walk lists at once.
// More than the CPUs pays, since the system calls block on the disk and on
// each other: the watcher's start-up walk of the bench's 100k-note vault
// (10,101 directories, 2 CPUs) took 418-510 ms with 2, 316-399 ms with 4
// and 292-345 ms with 8.
const walkWorkers = 8

func skipToNil(err error) error {
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

type walker struct {
	root   string
	rules  *Rules
	fn     fs.WalkDirFunc
	listed func(rel string, n int)

	// sem holds a token for each extra goroutine walking a directory; nil
	// walks in the calling goroutine only.
	sem     chan struct{}
	wg      sync.WaitGroup
	stopped atomic.Bool // an error or fs.SkipAll ended the walk
	mu      sync.Mutex
	err     error // the first of them
}

// fail ends the walk with err, unless it already ended.
func (w *walker) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.stopped.Store(true)
}

// spawn walks the contents of the directory rel in a goroutine of its own
// if a worker is free, and reports whether it did.
func (w *walker) spawn(rel string, d fs.DirEntry) bool {
	if w.sem == nil {
		return false
	}
	select {
	case w.sem <- struct{}{}:
	default:
		return false
	}
	w.wg.Go(func() {
		defer func() { <-w.sem }()
		if err := w.contents(rel, d); err != nil {
			w.fail(err)
		}
	})
	return true
}

// visit passes one entry to fn and, for a directory, walks its contents:
// in a goroutine of their own if a worker is free.
func (w *walker) visit(rel string, d fs.DirEntry) error {
	if err := w.fn(rel, d, nil); err != nil || !d.IsDir() {
		if errors.Is(err, fs.SkipDir) && d.IsDir() {
			return nil
		}
		return err
	}
	if w.spawn(rel, d) {
		return nil
	}
	return w.contents(rel, d)
}

// contents walks the contents of the directory rel.
func (w *walker) contents(rel string, d fs.DirEntry) error {
	abs := filepath.Join(w.root, filepath.FromSlash(rel))
	entries, done, err := readDir(abs, rel == "")
	werr := w.entries(rel, d, entries, err)
	if err := done(); err != nil && werr == nil {
		werr = err
	}
	return werr
}

// entries handles the listing of the directory rel: its ignore files, then
// each entry the rules keep. err is the listing's error, if any.
func (w *walker) entries(rel string, d fs.DirEntry, entries []fs.DirEntry, err error) error {
	if w.listed != nil {
		w.listed(rel, len(entries))
	}
	if err != nil {
		if err := w.fn(rel, d, err); err != nil && !errors.Is(err, fs.SkipDir) {
			return err
		}
		if len(entries) == 0 {
			return nil
		}
	}
	var present [len(ignoreFileNames)]bool
	for _, e := range entries {
		if i := ignoreFileIndex(e.Name()); i >= 0 && e.Type().IsRegular() {
			present[i] = true
		}
		if rel != "" && e.Name() == VaultMarker && e.IsDir() {
			// A vault of its own inside this one: its knotd answers it.
			return nil
		}
	}
	var ferr error
	w.rules.loadDir(w.root, rel, &present, func(name string, err error) {
		if ferr == nil {
			if err := w.fn(path.Join(rel, name), nil, err); err != nil && !errors.Is(err, fs.SkipDir) {
				ferr = err
			}
		}
	})
	if ferr != nil {
		return ferr
	}
	for _, e := range entries {
		if w.stopped.Load() {
			return nil
		}
		child := path.Join(rel, e.Name())
		if w.rules.ignoredEntry(child, e.IsDir()) {
			continue
		}
		if err := w.visit(child, e); err != nil {
			if errors.Is(err, fs.SkipDir) { // from a file: skip the rest of this directory
				return nil
			}
			return err
		}
	}
	return nil
}
