package statedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/knotd/knotd/internal/flock"
)

// ErrLocked is wrapped by LockedError.
var ErrLocked = errors.New("vault is in use by another knotd")

// Holder describes the knotd that holds a vault's lock. While a knotd
// holds it, the lock file holds one line of JSON:
//
//	{"pid":1234,"host":"laptop","started":"2026-11-21T19:30:05Z","root":"/home/ada/notes"}
//
// The OS lock on the file, not its content, is what excludes a second
// knotd: the kernel releases it when the holder dies, so stale content
// left by a crash is overwritten by the next holder and never blocks it.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
	Root    string    `json:"root,omitempty"`
}

// LockedError reports that another knotd holds the vault. Holder is the
// zero Holder if the holder had not yet written its name.
type LockedError struct {
	Vault  string
	Holder Holder
}

// Error says who holds the vault and what to do.
func (e *LockedError) Error() string {
	who := "another knotd"
	if e.Holder.PID > 0 {
		who = fmt.Sprintf("knotd pid %d", e.Holder.PID)
		if e.Holder.Host != "" {
			who += " on " + e.Holder.Host
		}
		if !e.Holder.Started.IsZero() {
			who += " (started " + e.Holder.Started.UTC().Format(time.RFC3339) + ")"
		}
		if e.Holder.Root != "" && e.Holder.Root != e.Vault {
			who += " for " + e.Holder.Root
		}
	}
	return fmt.Sprintf("vault %s is in use by %s; stop it or use another vault", e.Vault, who)
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

// Lock is a held vault lock with the vault's folder. Release it when knotd
// is done with the vault.
type Lock struct {
	Folder Folder
	f      *os.File
}

// Acquire finds the folder of the vault at root (an absolute directory
// path, symbolic links resolved) in the state directory home, or makes
// one, and takes the vault's lock without waiting. If another knotd holds
// it, Acquire returns a *LockedError naming that knotd. The lock is per
// open file, so a second Acquire in the same process also fails.
func Acquire(home, root string) (*Lock, error) {
	reg, err := lockRegistry(home)
	if err != nil {
		return nil, err
	}
	defer reg.Close() // closing releases the registry lock; nothing was written to it
	f, err := locate(home, root, time.Now())
	if err != nil {
		return nil, err
	}
	lf, err := lockFile(filepath.Join(f.Dir, LockFile), root)
	if err != nil {
		return nil, err
	}
	return &Lock{Folder: f, f: lf}, nil
}

// lockFile takes the lock file at path (creating it, mode 0600) and
// records this process as the holder.
func lockFile(path, root string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("statedir: lock %s: %w", root, err)
	}
	err = flock.TryLock(f)
	if errors.Is(err, flock.ErrLocked) && staleHolder(readHolder(f)) {
		err = retryLock(f)
	}
	if err != nil {
		h := readHolder(f)
		_ = f.Close() // nothing was written; the lock error is what matters
		if errors.Is(err, flock.ErrLocked) {
			return nil, &LockedError{Vault: root, Holder: h}
		}
		return nil, fmt.Errorf("statedir: lock %s: %w", path, err)
	}
	if err := writeHolder(f, root); err != nil {
		_ = f.Close() // closing releases the lock; report the write error
		return nil, fmt.Errorf("statedir: lock %s: %w", path, err)
	}
	return f, nil
}

// staleWait is how long lockFile waits for a lock whose recorded holder is
// no longer running.
const staleWait = 2 * time.Second

// staleHolder reports that h, the recorded holder of a lock found taken,
// is a process of this machine that no longer runs. The lock is then held
// by a process it was starting when it died (forked, not yet running its
// program, which closes the lock file): knotd killed while it started an
// agent, and started again at once.
func staleHolder(h Holder) bool {
	if h.PID <= 0 || h.PID == os.Getpid() {
		return false
	}
	if host, err := os.Hostname(); err != nil || host != h.Host {
		return false
	}
	return !processRunning(h.PID)
}

// retryLock tries to take f's lock again for up to staleWait.
func retryLock(f *os.File) error {
	deadline := time.Now().Add(staleWait)
	for {
		time.Sleep(10 * time.Millisecond) // a poll interval: nothing signals the release
		err := flock.TryLock(f)
		if !errors.Is(err, flock.ErrLocked) || time.Now().After(deadline) {
			return err
		}
	}
}

// Release releases the lock. The file stays (removing it would let a
// third knotd lock a new file while a second still waits on the old one).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := flock.Unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("statedir: release lock: %w", err)
	}
	return nil
}

// writeHolder replaces the file's content with this process's Holder.
func writeHolder(f *os.File, root string) error {
	host, _ := os.Hostname() // the host only decorates the message
	b, err := json.Marshal(Holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC().Truncate(time.Second), Root: root})
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(append(b, '\n'), 0); err != nil {
		return err
	}
	return f.Sync()
}

// readHolder reads the holder a lock file names, or the zero Holder if
// the content is missing or unreadable (the holder may be mid-write). It
// reads at most 4 KiB.
func readHolder(f io.ReaderAt) Holder {
	var h Holder
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err != nil || json.Unmarshal(b, &h) != nil {
		return Holder{}
	}
	return h
}
