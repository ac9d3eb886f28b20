package statedir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/durable"
	"github.com/knotd/knotd/internal/vaultfs"
)

// deviceFile is the device's identity in the state directory.
const deviceFile = "device.json"

// Device is this machine's identity among the devices that share a vault:
// made once, the first time knotd runs, and kept in device.json. It is
// knotd's own, not the host name alone, so that two state directories on
// one machine are two devices (which is how the tests run two devices).
type Device struct {
	// ID is a random UUID: it names the device's heartbeat file in a vault.
	ID string `json:"id"`
	// Name is the host name when the identity was made; people choose the
	// answering device by it (runner: in the vault config).
	Name string `json:"name"`
	// Created is when the identity was made.
	Created time.Time `json:"created"`
}

// LoadDevice returns the device identity kept in the state directory
// home, making it on first use. Two knotd making it at the same moment
// end up with the same one.
func LoadDevice(home string) (Device, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return Device{}, fmt.Errorf("statedir: %w", err)
	}
	d, err := readDevice(home)
	if !errors.Is(err, fs.ErrNotExist) {
		return d, err
	}
	host, _ := os.Hostname() // a device without a host name is still a device
	host = strings.TrimSpace(host)
	if host == "" {
		host = "device"
	}
	d = Device{ID: uuid.NewString(), Name: host, Created: time.Now().UTC().Truncate(time.Second)}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return Device{}, fmt.Errorf("statedir: encode the device identity: %w", err)
	}
	// Written whole beside its name, then linked to it: a link fails if
	// the name exists, so the first knotd to finish wins and every other
	// one reads its identity. This is why it is not vaultfs.Replace, whose
	// rename would let the last writer win: two knotd would each have used
	// an identity of their own.
	tmp, err := os.CreateTemp(home, ".device-*.tmp")
	if err != nil {
		return Device{}, fmt.Errorf("statedir: %w", err)
	}
	defer os.Remove(tmp.Name()) // the link, if made, keeps the content
	_, werr := tmp.Write(append(b, '\n'))
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return Device{}, fmt.Errorf("statedir: write %s: %w", deviceFile, werr)
	}
	if err := os.Link(tmp.Name(), filepath.Join(home, deviceFile)); err != nil && !errors.Is(err, fs.ErrExist) {
		return Device{}, fmt.Errorf("statedir: %w", err)
	}
	// The new name is durable once the directory is synced: without it, a
	// crash could lose the identity after knotd had used it.
	if err := durable.SyncDir(home); err != nil {
		return Device{}, fmt.Errorf("statedir: sync %s: %w", home, err)
	}
	return readDevice(home)
}

func readDevice(home string) (Device, error) {
	r, err := os.OpenRoot(home)
	if err != nil {
		return Device{}, fmt.Errorf("statedir: %w", err)
	}
	defer r.Close()
	b, _, err := vaultfs.ReadFile(r, deviceFile, maxInfo)
	if err != nil {
		return Device{}, err
	}
	var d Device
	if err := json.Unmarshal(b, &d); err != nil || uuid.Validate(d.ID) != nil || d.Name == "" {
		return Device{}, fmt.Errorf("statedir: %s is damaged (remove it and knotd makes a new identity for this device): %v",
			filepath.Join(home, deviceFile), err)
	}
	return d, nil
}
