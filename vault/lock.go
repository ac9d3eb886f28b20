package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/knotd/knotd/internal/flock"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/knotd/knotd/strand"
)

// LockFile is the lock file's name inside strand.StateDir. While a knotd
// holds a vault, the file holds one line of JSON naming the holder:
//
//	{"pid":1234,"host":"laptop","started":"2026-11-21T19:30:05Z"}
//
// The OS lock on the file, not its content, is what excludes a second
// knotd: the kernel releases it when the holder dies, so stale content
// left by a crash is overwritten by the next holder and never blocks it.
const LockFile = "lock"

// ErrLocked is wrapped by LockedError.
var ErrLocked = errors.New("vault: locked by another knotd")

// Holder describes the knotd that holds a vault's lock.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
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
	}
	return fmt.Sprintf("vault %s is in use by %s; stop it or use another vault", e.Vault, who)
}

// Unwrap returns ErrLocked.
func (e *LockedError) Unwrap() error { return ErrLocked }

// Lock is a held vault lock. Release it when knotd is done with the vault.
type Lock struct {
	f *os.File
}

// AcquireLock takes the lock of the vault at root without waiting,
// creating <root>/.knot/ (mode 0700) and the lock file (mode 0600) if
// needed, and records this process as the holder. If another knotd holds
// it, AcquireLock returns a *LockedError naming that knotd. The lock is
// per open file, so a second AcquireLock in the same process also fails.
func AcquireLock(root string) (*Lock, error) {
	dir := filepath.Join(root, strand.StateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("vault: lock %s: %w", root, err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("vault: lock %s: %w", root, err)
	}
	if err := flock.TryLock(f); err != nil {
		h := readHolder(f)
		_ = f.Close() // nothing was written; the lock error is what matters
		if errors.Is(err, flock.ErrLocked) {
			return nil, &LockedError{Vault: root, Holder: h}
		}
		return nil, fmt.Errorf("vault: lock %s: %w", path, err)
	}
	if err := writeHolder(f); err != nil {
		_ = f.Close() // closing releases the lock; report the write error
		return nil, fmt.Errorf("vault: lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Release releases the lock. The file stays (removing it would let a
// third knotd lock a new file while a second still waits on the old one).
func (l *Lock) Release() error {
	if l.f == nil {
		return nil
	}
	err := flock.Unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("vault: release lock: %w", err)
	}
	return nil
}

// writeHolder replaces the file's content with this process's Holder.
func writeHolder(f *os.File) error {
	host, _ := os.Hostname() // the host only decorates the message
	b, err := json.Marshal(Holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC().Truncate(time.Second)})
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

// readHolder reads the holder a locked file names, or the zero Holder if
// the content is missing or unreadable (the holder may be mid-write).
func readHolder(f *os.File) Holder {
	var h Holder
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 4096))
	if err != nil || json.Unmarshal(b, &h) != nil {
		return Holder{}
	}
	return h
}
