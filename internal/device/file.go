package device

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/vaultfs"
)

// Dir is the folder of the heartbeats inside a vault.
const Dir = ".knot/devices"

// maxHeartbeat bounds what is read of one heartbeat file, maxDevices how
// many other devices' heartbeats are read, and maxEntries how many names
// of the folder are looked at: the files are someone else's input, and
// heartbeats are never removed (each has one writer, which may be gone).
const (
	maxHeartbeat = 16 << 10
	maxDevices   = 1024
	maxEntries   = 64 << 10
)

// ErrTooMany is wrapped by Read's error when the folder holds more
// heartbeats than it reads: the heartbeats it returns are still good.
var ErrTooMany = errors.New("too many heartbeats")

// gitignore keeps the heartbeats out of git: they change at every beat and
// are this device's, while git vaults are shared by commit.
const gitignore = "# knotd: each device's heartbeat, written by that device only (see knotd's README).\n*\n"

// Name returns the name of the heartbeat file of device id inside the
// vault: Dir/<id>.json.
func Name(id string) string { return path.Join(Dir, id+".json") }

// Read returns the heartbeats in the vault whose root is vault, in no
// particular order. A file that is not a heartbeat (a sync tool's temporary
// file or conflict copy, a file that does not parse, one named for another
// id, a link) is skipped; none at all is no error.
//
// The heartbeats of the devices named by always (this device's own, and
// the one that answers the vault, as last seen) are read by name whatever
// the folder holds. Of the others, at most maxDevices are read, the most
// recently written first (those of devices gone long ago are the ones
// left): when the folder holds more, the error wraps ErrTooMany and says
// so, and the heartbeats read are returned all the same.
func Read(vault *os.Root, always ...string) ([]Heartbeat, error) {
	return read(vault, maxDevices, always)
}

// ReadAll is Read without the bound on the number of devices (the folder's
// first 65,536 names are looked at): a device that does not know yet which
// device answers reads it once when it starts, so that a claim whose file
// is older than a thousand others is not missed.
func ReadAll(vault *os.Root, always ...string) ([]Heartbeat, error) {
	return read(vault, maxEntries, always)
}

// read is Read with at most limit other devices' heartbeats read.
func read(vault *os.Root, limit int, always []string) ([]Heartbeat, error) {
	var hs []Heartbeat
	seen := map[string]bool{}
	for _, id := range always {
		if seen[id] || uuid.Validate(id) != nil {
			continue
		}
		seen[id] = true
		if h, ok := ReadOne(vault, id); ok {
			hs = append(hs, h)
		}
	}
	d, err := vaultfs.OpenDir(vault, Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return hs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("device: read heartbeats: %w", err)
	}
	type entry struct {
		id  string
		mod time.Time
	}
	var files []entry
	listed := 0
	for listed < maxEntries {
		es, err := d.ReadDir(min(1024, maxEntries-listed))
		listed += len(es)
		for _, e := range es {
			id, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || seen[id] || uuid.Validate(id) != nil || !e.Type().IsRegular() {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue // gone meanwhile
			}
			files = append(files, entry{id, fi.ModTime()})
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			_ = d.Close() // read only: a close error loses nothing
			return nil, fmt.Errorf("device: read heartbeats: %w", err)
		}
	}
	if err := d.Close(); err != nil {
		return nil, fmt.Errorf("device: read heartbeats: %w", err)
	}
	slices.SortFunc(files, func(a, b entry) int { return b.mod.Compare(a.mod) })
	var tooMany error
	if len(files) > limit || listed >= maxEntries {
		tooMany = fmt.Errorf("device: read heartbeats: %w: %s holds more than %d device files; read the %d written last (heartbeats of devices no longer used can be removed)",
			ErrTooMany, Dir, limit, limit)
		files = files[:min(len(files), limit)]
	}
	for _, f := range files {
		if h, ok := ReadOne(vault, f.id); ok {
			hs = append(hs, h)
		}
	}
	return hs, tooMany
}

// ReadOne returns the heartbeat of device id in the vault, and whether
// there is one: a file that is missing, no regular file, too large, does
// not parse or names another device is none.
func ReadOne(vault *os.Root, id string) (Heartbeat, bool) {
	if uuid.Validate(id) != nil {
		return Heartbeat{}, false
	}
	b, _, err := vaultfs.ReadFile(vault, Name(id), maxHeartbeat)
	if err != nil {
		return Heartbeat{}, false // gone meanwhile, not a regular file, too large: not a heartbeat
	}
	var h Heartbeat
	if json.Unmarshal(b, &h) != nil || h.Device != id {
		return Heartbeat{}, false
	}
	return h, true
}

// Write writes the device's heartbeat h into the vault, atomically (a
// temporary file renamed over it), making the folder if needed. In a git
// work tree it also keeps the folder out of git with a .gitignore of its
// own, so that git status never shows a heartbeat.
func Write(vault *os.Root, h Heartbeat, inGit bool) error {
	if uuid.Validate(h.Device) != nil {
		return fmt.Errorf("device: write heartbeat: %q is not a device id", h.Device)
	}
	if err := vault.MkdirAll(filepath.FromSlash(Dir), 0o755); err != nil {
		return fmt.Errorf("device: write heartbeat: %w", err)
	}
	if inGit {
		name := filepath.FromSlash(path.Join(Dir, ".gitignore"))
		f, err := vault.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			_, err = f.WriteString(gitignore)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("device: keep heartbeats out of git: %w", err)
		}
	}
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return fmt.Errorf("device: write heartbeat: %w", err)
	}
	// Not synced: a heartbeat a crash loses is written again at the next
	// beat, and a claim it loses is made again when knotd starts.
	if err := vaultfs.Replace(vault, Name(h.Device), append(b, '\n'), vaultfs.ReplaceOptions{Perm: 0o644, NoSync: true}); err != nil {
		return fmt.Errorf("device: write heartbeat: %w", err)
	}
	return nil
}
