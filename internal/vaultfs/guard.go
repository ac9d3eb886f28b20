package vaultfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"
)

// ErrChanged is wrapped by ReplaceIfUnchanged's error when the file is no
// longer the content the caller read: someone saved it meanwhile.
var ErrChanged = errors.New("file changed on disk since it was read")

// Guard is what ReplaceIfUnchanged leaves of a replace: the file that
// left the name, kept open until it is sure that no save that was under
// way into it (an editor that opened it before the replace and writes
// after, a shell appending to it) is lost. Where Linux leases tell who
// has the file open for writing, such a save is waited for and put back
// before ReplaceIfUnchanged returns; Settle, which the caller calls once
// any save under way must be over (knotd: at the end of the run, before
// it records the new version as processed), looks once more, and is the
// only look where there are no leases.
type Guard struct {
	root   *os.Root
	name   string   // slash-separated
	file   *os.File // the file that left the name, open read-only
	leases bool     // whether leases on file tell who writes into it
	seen   []byte   // its content when last looked at
	base   []byte   // what the name held then (nil: not known)
	limit  int64    // bounds what is read
	done   bool
	hooks  *exchangeHooks // passed on to the replaces that put saves back
	next   *Guard         // another file to settle with this one (see undoExchange)
	// changed: a late save was found (what the replace put at the name
	// is no longer what it holds); err: the first error of a look.
	changed bool
	err     error
}

// exchangeHooks are the tests' seams into ReplaceIfUnchanged
// (ReplaceOptions.hooks; nil outside the tests): before and after are
// called, when set, with the file read and the new one just before the
// exchange and just after it, to race a save against a replace; noExchange
// and noLeases make it do what systems without an exchange or without
// leases do. A Guard passes them on to the replaces that put a late save
// back.
type exchangeHooks struct {
	before, after func(f0, ours *os.File)
	// back is called after each exchange that undoes one, with the file
	// it just pushed to the name (open; nil where it could not be opened).
	back                 func(pushed *os.File)
	noExchange, noLeases bool
}

// exchanges reports whether the replace may use an exchange.
func (h *exchangeHooks) exchanges() bool { return h == nil || !h.noExchange }

// takeLease is takeLease, unless the seams turn leases off.
func (h *exchangeHooks) takeLease(f *os.File) (leaseState, error) {
	if h != nil && h.noLeases {
		return leaseUnsupported, nil
	}
	return takeLease(f)
}

func (h *exchangeHooks) beforeExchange(f0, ours *os.File) {
	if h != nil && h.before != nil {
		h.before(f0, ours)
	}
}

func (h *exchangeHooks) exchangedBack(pushed *os.File) {
	if h != nil && h.back != nil {
		h.back(pushed)
	}
}

func (h *exchangeHooks) afterExchange(f0, ours *os.File) {
	if h != nil && h.after != nil {
		h.after(f0, ours)
	}
}

// writerWait bounds how long a replace or a settle waits for somebody who
// has the replaced file open for writing to close it.
const writerWait = 5 * time.Second

// ReplaceIfUnchanged replaces the file name inside root, whose content was
// original when the caller read it, with updated, unless someone saved it
// meanwhile, never losing what they saved, whatever their way of saving:
// then it replaces nothing and returns an error wrapping ErrChanged, and
// the caller reads again (later, for a save under way).
//
// The new content goes to a temporary file beside name (synced, with the
// old file's permissions), which is exchanged with name in one step where
// the system can (renameat2 RENAME_EXCHANGE on Linux, RENAME_SWAP on
// macOS), so that what was at name at that very moment can be looked at:
// if it is not the file the caller read, with the content the caller read
// (someone renamed their save over it between the caller's read and the
// exchange), the exchange is undone (see exchangeBack) and nothing is
// lost. Elsewhere the file is compared just before a rename, which leaves
// a window of a few system calls for a rename-based save.
//
// A save that writes into the file rather than renaming over it is seen
// with a Linux file lease: the replace takes a read lease on the file
// before it compares it, which Linux grants only while nobody has the
// file open for writing (else: ErrChanged, a save is under way), and
// breaks as soon as somebody opens it for writing or truncates it,
// holding their open back until the lease is released. A broken lease
// after the exchange undoes it, before the open goes on. The new file is
// leased the same way, for whoever opens it by name in the moment before
// an exchange is undone. A save that still got into the file that left
// the name (its writer found the file by name just before the exchange
// and opened it just after) is waited for and put back before
// ReplaceIfUnchanged returns. Where there are no leases (other systems,
// another user's file, some network file systems), nothing tells of a
// save under way: the file that left the name is kept open, and the
// Guard puts a late save back when settled.
//
// The directory is synced unless opts.DeferDirSync or opts.NoSync;
// opts.Check and opts.Perm are not used. An error (ErrChanged, or one met
// after the exchange, which is then undone) may come with a Guard too,
// over the new file in case someone wrote into it in the moment it was at
// the name: settle it like any other, whatever the error.
func ReplaceIfUnchanged(root *os.Root, name string, original, updated []byte, opts ReplaceOptions) (g *Guard, err error) {
	fail := func(err error) (*Guard, error) { return nil, &fs.PathError{Op: "replace", Path: name, Err: err} }
	f0, fi0, err := Open(root, name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrReplaced) {
		return fail(fmt.Errorf("%w: %w", ErrChanged, err))
	}
	if err != nil {
		return fail(err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = f0.Close() // read only; closing also releases its lease
		}
	}()
	limit := int64(max(len(original), len(updated))) + 1
	if same, err := holds(f0, original, limit); err != nil {
		return fail(err)
	} else if !same {
		return fail(ErrChanged)
	}
	dir, base := path.Split(name)
	perm := fi0.Mode().Perm()
	tmp, tmpName, err := createTemp(root, dir, base, perm)
	if err != nil {
		return fail(err)
	}
	// From here on the temporary name is removed on every way out: it
	// holds the new content, or, after an exchange, the old file.
	removeTmp := true
	defer func() {
		if removeTmp {
			if rerr := root.Remove(tmpName); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
				g, err = nil, &fs.PathError{Op: "replace", Path: name, Err: fmt.Errorf("remove the temporary name %s (the new content is in place): %w", tmpName, rerr)}
			}
		}
	}()
	_, err = tmp.Write(updated)
	if err == nil {
		err = tmp.Chmod(perm) // exactly the old permissions, whatever the umask took away
	}
	if err == nil && !opts.NoSync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(err)
	}
	ours, _, err := Open(root, filepath.ToSlash(tmpName)) // for its lease, if an exchange is undone
	if err != nil {
		return fail(err)
	}
	keepOurs := false
	defer func() {
		if !keepOurs {
			_ = ours.Close() // read only; closing also releases its lease
		}
	}()
	d, err := root.Open(filepath.FromSlash(dirOrDot(dir)))
	if err != nil {
		return fail(err)
	}
	defer d.Close() // read only

	lease, err := opts.hooks.takeLease(f0)
	if err != nil {
		return fail(err)
	}
	if lease == leaseBusy {
		return fail(fmt.Errorf("%w: it is open for writing (a save is under way)", ErrChanged))
	}
	leases := lease == leaseTaken
	oldLease := leases
	release := func() error {
		if !oldLease {
			return nil
		}
		oldLease = false
		return releaseLease(f0)
	}
	defer func() { _ = release() }() // on an error; closing f0 releases it as well
	oursLease := false
	if leases {
		// A save that ended between the first look and the lease.
		if same, err := holds(f0, original, limit); err != nil {
			return fail(err)
		} else if !same {
			return fail(ErrChanged)
		}
		// Whoever opens the new file for writing while it is at the
		// name, the exchange undone, must be seen as well.
		if st, err := opts.hooks.takeLease(ours); err != nil {
			return fail(err)
		} else {
			oursLease = st == leaseTaken
		}
	}
	defer func() {
		if oursLease {
			_ = releaseLease(ours) // on an error; closing ours releases it as well
		}
	}()

	tmpBase, osBase := filepath.Base(tmpName), filepath.FromSlash(base)
	opts.hooks.beforeExchange(f0, ours)
	exchanged := false
	if opts.hooks.exchanges() {
		if exchanged, err = exchange(d, tmpBase, osBase); err != nil {
			return fail(err)
		}
	}
	if !exchanged {
		// No exchange here: compare just before the rename.
		if same, err := isFile(root, name, fi0, f0, original, limit); err != nil {
			return fail(err)
		} else if !same {
			return fail(ErrChanged)
		}
		if err := root.Rename(tmpName, filepath.FromSlash(name)); err != nil {
			return fail(err)
		}
		removeTmp = false
	} else {
		opts.hooks.afterExchange(f0, ours)
		// tmpName now holds what was at name: the file read, untouched,
		// and nobody on their way to write into it?
		same, err := isFile(root, filepath.ToSlash(tmpName), fi0, f0, original, limit)
		if err == nil && same && oldLease {
			var broken bool
			broken, err = leaseBroken(f0)
			same = !broken
		}
		if err != nil || !same {
			og, keptOurs, uerr := undoExchange(root, d, tmpName, tmpBase, osBase, ours, &oursLease, updated, limit, release, opts.hooks)
			if uerr != nil {
				return fail(fmt.Errorf("the file changed on disk during the replace, and putting the save back failed: %w", uerr))
			}
			removeTmp = false // undoExchange removed it
			keepOurs = keptOurs
			if err == nil {
				err = ErrChanged
			}
			_, err = fail(err)
			return og, err
		}
		// The old file loses its last name while its lease still holds
		// back whoever found it by that name and is opening it for
		// writing; they write into it, and Settle puts that back.
		if err := root.Remove(tmpName); err != nil {
			return fail(fmt.Errorf("remove the replaced file's temporary name %s (the new content is in place): %w", tmpName, err))
		}
		removeTmp = false
	}
	if err := release(); err != nil {
		return fail(err)
	}
	if oursLease {
		oursLease = false
		if err := releaseLease(ours); err != nil {
			return fail(err)
		}
	}
	if !opts.DeferDirSync && !opts.NoSync {
		if err := SyncDir(root, dir); err != nil {
			return fail(fmt.Errorf("sync the directory (the file is replaced): %w", err))
		}
	}
	keep = true
	g = &Guard{root: root, name: name, file: f0, leases: leases, seen: original, base: updated, limit: limit + maxLateGrowth, hooks: opts.hooks}
	if leases {
		g.look() // a writer who got in before the lease was released
	}
	return g, nil
}

// isFile reports whether name is still the file fi describes, open as f,
// holding want.
func isFile(root *os.Root, name string, fi fs.FileInfo, f *os.File, want []byte, limit int64) (bool, error) {
	xi, err := root.Lstat(filepath.FromSlash(name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !os.SameFile(xi, fi) {
		return false, nil
	}
	return holds(f, want, limit)
}

// waitWriters waits, at most writerWait, until nobody has f open for
// writing, where leases tell; it reports whether that is known.
func waitWriters(f *os.File, hooks *exchangeHooks) (bool, error) {
	deadline := time.Now().Add(writerWait)
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, time.Millisecond) {
		st, err := hooks.takeLease(f)
		if err != nil || st == leaseUnsupported {
			return false, err
		}
		if st == leaseTaken {
			return true, releaseLease(f)
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(pause)
	}
}

// undoExchange puts back what an exchange took away from name: what is at
// tmpName now (someone's save S that landed before the exchange, or the
// file read, which someone is about to write into) goes back to name, by
// exchanging again (see exchangeBack), and the old file's lease is
// released (release), which lets an open held back by it go on. Then
// tmpName is removed. Somebody may have opened the new file (ours) by
// name while it was there, to write into it: with leases, ours is leased
// (*oursLease) from before the exchange, and unbroken it says that nobody
// did. The same goes for a save that exchangeBack put back at the name
// for a moment and then took away again, a newer save having replaced
// ours meanwhile: it is leased from before it went to the name. A file
// somebody may have written into that way (its lease broken, or no
// leases) gets a Guard, as if the save now at the name had replaced it,
// which puts such a write back once settled; undoExchange returns them
// (nil: none), and whether one of them holds ours (which the caller then
// must not close).
func undoExchange(root *os.Root, d *os.File, tmpName, tmpBase, osBase string, ours *os.File, oursLease *bool, updated []byte, limit int64, release func() error, hooks *exchangeHooks) (g *Guard, keptOurs bool, err error) {
	aside, err := exchangeBack(root, d, tmpName, tmpBase, osBase, ours, limit, hooks)
	if err != nil {
		return nil, false, err
	}
	keptAside := false
	defer func() {
		if aside != nil && !keptAside {
			_ = aside.f.Close() // read only; closing also releases its lease
		}
	}()
	if err := release(); err != nil {
		return nil, false, err
	}
	name := path.Join(path.Dir(filepath.ToSlash(tmpName)), filepath.ToSlash(osBase))
	// The files somebody may have opened at the name to write into, that
	// are no longer there: ours, and what is at tmpName if not ours.
	left := []pushedFile{{f: ours, leased: *oursLease, seen: updated}}
	if aside != nil {
		left = append(left, *aside)
	}
	var written []pushedFile
	for _, p := range left {
		if p.leased {
			broken, err := leaseBroken(p.f)
			if err != nil {
				return nil, false, err
			}
			if !broken {
				continue
			}
		}
		written = append(written, p)
	}
	var base []byte
	if len(written) > 0 {
		// What the name holds now is what a write into them came after.
		if base, _, err = ReadFile(root, name, limit+maxLateGrowth); err != nil {
			base = nil // gone or replaced already: Settle looks again
		}
	}
	// tmpName goes while the leases still hold back whoever found its
	// file by name; after that nobody can.
	if err := root.Remove(tmpName); err != nil {
		return nil, false, err
	}
	if *oursLease {
		*oursLease = false
		if err := releaseLease(ours); err != nil {
			return nil, false, err
		}
	}
	if aside != nil && aside.leased {
		if err := releaseLease(aside.f); err != nil {
			return nil, false, err
		}
	}
	for i := len(written) - 1; i >= 0; i-- {
		p := written[i]
		g = &Guard{root: root, name: name, file: p.f, leases: p.leased, seen: p.seen, base: base, limit: limit + maxLateGrowth, hooks: hooks, next: g}
		keptOurs = keptOurs || p.f == ours
		keptAside = keptAside || aside != nil && p.f == aside.f
	}
	for n := g; n != nil; n = n.next {
		if n.leases {
			n.look() // they are writing, or have written: put it back now
		}
	}
	return g, keptOurs, nil
}

// pushedFile is a file that an undone exchange put at the name for a
// moment: open read-only, leased where leases tell (so that whoever opens
// it by name for writing is seen), with what it held then.
type pushedFile struct {
	f      *os.File
	leased bool
	seen   []byte
}

// exchangeBack exchanges the file at tmpName back to the name, which should
// hold ours. But someone may have renamed a save over ours meanwhile: that
// save is then newer than what comes back, and what is pulled into
// tmpName is not ours; it goes back to the name by one more exchange, and
// so on, until what an exchange pulls is what the one before pushed (the
// name held still in between). tmpName then holds what the name should
// not: ours, or a save a newer one replaced, as it would have without
// knotd. But that save was at the name for a moment, between two
// exchanges, and an editor may have opened it by name then, to save into
// it: so each file is opened and leased before it is pushed to the name,
// and the one left at tmpName, if not ours, is returned (its lease
// taken, for undoExchange to look at; nil: ours is at tmpName).
func exchangeBack(root *os.Root, d *os.File, tmpName, tmpBase, osBase string, ours *os.File, limit int64, hooks *exchangeHooks) (aside *pushedFile, err error) {
	pushed, err := ours.Stat() // what the name should hold
	if err != nil {
		return nil, err
	}
	atTmp, err := root.Lstat(tmpName)
	if err != nil {
		return nil, err
	}
	var files []*pushedFile // each file pushed to the name, open
	defer func() {
		for _, p := range files {
			if p != aside {
				_ = p.f.Close() // read only; closing also releases its lease
			}
		}
	}()
	for range 64 {
		p, err := pushFile(root, tmpName, atTmp, limit, hooks)
		if err != nil {
			return nil, err
		}
		if p != nil {
			files = append(files, p)
		}
		if _, err := exchange(d, tmpBase, osBase); err != nil {
			return nil, err
		}
		var f *os.File
		if p != nil {
			f = p.f
		}
		hooks.exchangedBack(f)
		pulled, err := root.Lstat(tmpName)
		if err != nil {
			return nil, err
		}
		if os.SameFile(pulled, pushed) {
			for _, p := range files {
				if fi, err := p.f.Stat(); err == nil && os.SameFile(fi, pulled) {
					return p, nil
				} else if err != nil {
					return nil, err
				}
			}
			return nil, nil // ours, or a file nobody can write into
		}
		// A save landed at the name: put it back.
		pushed, atTmp = atTmp, pulled
	}
	return nil, fmt.Errorf("the name kept changing while knotd put the file back")
}

// pushFile opens and leases the file at tmpName (which must be atTmp),
// about to go to the name. A file that is not a regular file (nobody
// saves into a link by writing into it) comes back nil.
func pushFile(root *os.Root, tmpName string, atTmp fs.FileInfo, limit int64, hooks *exchangeHooks) (*pushedFile, error) {
	f, fi, err := Open(root, filepath.ToSlash(tmpName))
	if errors.Is(err, ErrNotRegular) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !os.SameFile(fi, atTmp) {
		_ = f.Close() // read only
		return nil, fmt.Errorf("the temporary name %s changed while knotd put a file back: %w", tmpName, ErrReplaced)
	}
	st, err := hooks.takeLease(f)
	if err != nil {
		_ = f.Close() // read only
		return nil, err
	}
	// Busy: somebody is writing into it already; without a lease the
	// Guard compares its content instead.
	seen, err := readAll(f, limit+maxLateGrowth)
	if err != nil {
		_ = f.Close() // read only; closing also releases its lease
		return nil, err
	}
	return &pushedFile{f: f, leased: st == leaseTaken, seen: seen}, nil
}

// maxLateGrowth bounds what a late save may add to a file, for reading it.
const maxLateGrowth = 64 << 20

// holds reports whether the open file f holds exactly want (reading at
// most limit bytes, from its start).
func holds(f *os.File, want []byte, limit int64) (bool, error) {
	got, err := readAll(f, limit)
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, want), nil
}

// readAll reads the open file f from its start, at most limit bytes.
func readAll(f *os.File, limit int64) ([]byte, error) {
	return io.ReadAll(io.NewSectionReader(f, 0, limit))
}

func dirOrDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// Settle ends the guard's watch over the file that left the name, after a
// last look at it: a save that went into it since the last look is put
// back (see putBack). changed reports that a look found such a save, so
// that what the replace put at the name is no longer all it holds and
// the caller must not record it as the file's current version. A save
// that cannot be put back without throwing away a newer one is returned
// whole in a *LateSave error. Settle is idempotent; it closes the file.
func (g *Guard) Settle() (changed bool, err error) {
	if g == nil {
		return false, nil
	}
	if !g.done {
		g.done = true
		g.look()
		if cerr := g.file.Close(); cerr != nil && g.err == nil {
			g.err = fmt.Errorf("vaultfs: %s: %w", g.name, cerr)
		}
	}
	if g.next == nil {
		return g.changed, g.err
	}
	changed, err = g.next.Settle()
	return g.changed || changed, errors.Join(g.err, err)
}

// look puts back what was written into the file since it was last looked
// at, waiting first for whoever has it open for writing (where leases
// tell). Its error is kept in g.err.
func (g *Guard) look() {
	if g.err != nil {
		return
	}
	if g.leases {
		if _, err := waitWriters(g.file, g.hooks); err != nil {
			g.err = fmt.Errorf("vaultfs: %s: %w", g.name, err)
			return
		}
	}
	// Its content, not its stat: a write within one tick of the clock
	// that keeps the size leaves both the size and the time as they were.
	now, err := readAll(g.file, g.limit)
	if err != nil {
		g.err = fmt.Errorf("vaultfs: %s: read the file that left the name: %w", g.name, err)
		return
	}
	if bytes.Equal(now, g.seen) {
		return
	}
	g.changed = true
	put, err := putBack(g.root, g.name, g.seen, now, g.base, g.limit, g.hooks)
	g.seen = now
	if put != nil {
		g.base = put
	}
	g.err = err
}

// putBack puts a late save back at name: late is what a file holds that
// left the name when it held left, for base. Had the file not left, the
// save would have landed on the name; putBack makes it so:
//
//   - the name holds the late save already (a later save of the same
//     editor holds the append, or the whole rewrite): nothing to do;
//   - the name holds base, and maybe more appended since: an append
//     (left, then more) is made to base, a rewrite takes base's place,
//     and what was appended since follows;
//   - else an append is made to what the name holds now, and a rewrite,
//     which would throw a newer save away, is a *LateSave error that
//     carries it, for the caller to keep and report.
//
// It returns what it put at the name, if it put anything.
func putBack(root *os.Root, name string, left, late, base []byte, limit int64, hooks *exchangeHooks) ([]byte, error) {
	appended, isAppend := bytes.CutPrefix(late, left)
	deadline := time.Now().Add(writerWait)
	for pause := 50 * time.Microsecond; time.Now().Before(deadline); pause = min(2*pause, time.Millisecond) {
		cur, err := readSettled(root, name, limit, hooks)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &LateSave{Name: name, Content: late}
		}
		if errors.Is(err, ErrReplaced) || errors.Is(err, errBusy) {
			time.Sleep(pause)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("vaultfs: put back a late save into %s: %w", name, err)
		}
		var next []byte
		since, afterBase := []byte(nil), false
		if base != nil {
			since, afterBase = bytes.CutPrefix(cur, base)
		}
		switch {
		case isAppend && bytes.Contains(cur, appended), !isAppend && bytes.Contains(cur, late):
			return nil, nil // a later save of the same editor holds it
		case afterBase && isAppend:
			next = concat(base, appended, since)
		case afterBase:
			next = concat(late, since)
		case isAppend:
			next = concat(cur, appended)
		default:
			return nil, &LateSave{Name: name, Content: late}
		}
		ng, err := ReplaceIfUnchanged(root, name, cur, next, ReplaceOptions{hooks: hooks})
		if err != nil {
			// A Guard may come with the error (an exchange undone):
			// settled, it closes its file and puts back what went into it.
			_, serr := ng.Settle()
			if !errors.Is(err, ErrChanged) {
				return nil, errors.Join(fmt.Errorf("vaultfs: put back a late save into %s: %w", name, err), serr)
			}
			if serr != nil {
				return nil, serr
			}
			time.Sleep(pause) // saved meanwhile, or a save under way: look again
			continue
		}
		// A save under way into what this put back is as recent as this
		// one: it was looked at already where leases tell; look at once.
		if _, err := ng.Settle(); err != nil {
			return next, err
		}
		return next, nil
	}
	return nil, &LateSave{Name: name, Content: late}
}

// errBusy is readSettled's error for a file open for writing.
var errBusy = errors.New("the file is open for writing")

// readSettled reads the file name, at most limit bytes, if nobody has it
// open for writing, where leases tell (else an error wrapping errBusy): a
// save under way is no state to decide on.
func readSettled(root *os.Root, name string, limit int64, hooks *exchangeHooks) ([]byte, error) {
	f, _, err := Open(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close() // read only; closing also releases its lease
	st, err := hooks.takeLease(f)
	if err != nil {
		return nil, err
	}
	if st == leaseBusy {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errBusy}
	}
	b, err := readAll(f, limit)
	if st == leaseTaken {
		if rerr := releaseLease(f); err == nil {
			err = rerr
		}
	}
	return b, err
}

// concat returns the parts one after another, in a new slice.
func concat(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

// LateSave is Settle's error when a save that went into the file that
// left the name cannot be put back (the name is gone, or holds a newer
// save): Content is that save, whole, for the caller to keep where the
// user finds it.
type LateSave struct {
	Name    string
	Content []byte
}

func (e *LateSave) Error() string {
	return fmt.Sprintf("vaultfs: %s: a save (%d bytes) went into the file knotd had just replaced, and the name holds a newer save or is gone", e.Name, len(e.Content))
}
