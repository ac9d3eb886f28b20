package device

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/vaultfs"
)

// Dir is the folder of the heartbeats inside a vault.
const Dir = ".knot/devices"

// maxHeartbeat bounds what is read of one heartbeat file, and maxDevices
// how many heartbeats are read: the files are someone else's input.
const (
	maxHeartbeat = 16 << 10
	maxDevices   = 1024
)

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
func Read(vault *os.Root) ([]Heartbeat, error) {
	d, err := vaultfs.OpenDir(vault, Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("device: read heartbeats: %w", err)
	}
	entries, err := d.ReadDir(-1)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("device: read heartbeats: %w", err)
	}
	var hs []Heartbeat
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || uuid.Validate(id) != nil || !e.Type().IsRegular() {
			continue
		}
		if len(hs) == maxDevices {
			return hs, fmt.Errorf("device: read heartbeats: more than %d devices in %s; read the first %d", maxDevices, Dir, maxDevices)
		}
		b, _, err := vaultfs.ReadFile(vault, path.Join(Dir, e.Name()), maxHeartbeat)
		if err != nil {
			continue // gone meanwhile, or not a regular file
		}
		var h Heartbeat
		if json.Unmarshal(b, &h) != nil || h.Device != id {
			continue
		}
		hs = append(hs, h)
	}
	return hs, nil
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
