package control

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// socketName is the control socket's name in the vault's folder of the
// state directory.
const socketName = "control.sock"

// maxSocketPath is the longest socket path every system takes (macOS's
// sun_path holds 104 bytes with its terminating NUL; Linux's 108).
const maxSocketPath = 103

// SocketPath returns the control socket of the vault whose folder in
// the state directory is dir: dir/control.sock, or, when that path is
// too long for a socket, a short one in a folder of the user's own in
// the temporary directory, named after dir.
func SocketPath(dir string) string {
	p := filepath.Join(dir, socketName)
	if len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join(shortDir(), hex.EncodeToString(sum[:8])+".sock")
}

// shortDir is the folder of the short socket paths.
func shortDir() string {
	return filepath.Join(os.TempDir(), "knotd-"+strconv.Itoa(os.Getuid()))
}

// ErrNotOurs is wrapped by the errors about a control socket, or its
// folder, that is not the user's own: another local user could have made
// it (the temporary directory is shared), and would answer in knotd's
// place. Neither the daemon nor a client uses it.
var ErrNotOurs = errors.New("control: the control socket is not your own")

// checkSocket checks, before a client connects to the socket at path,
// what the daemon checked before it listened there: that its folder is
// the user's own, mode 0700, not a symbolic link, and that the socket is
// a socket of the user's. A folder or socket that is not there wraps
// ErrNoDaemon.
func checkSocket(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (no folder %s)", ErrNoDaemon, dir)
	}
	if err := ownFolder(dir); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w (nothing listens on %s)", ErrNoDaemon, path)
	case err != nil:
		return fmt.Errorf("control: %w", err)
	case fi.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("%w: %s is not a socket (%s)", ErrNotOurs, path, fi.Mode().Type())
	}
	return ownSocket(path, fi)
}

// Listen makes the control socket at path and listens on it. A socket
// left there by a knotd that is gone is replaced; one a running knotd
// answers on is not (the vault lock keeps a second daemon out before
// that). The socket is 0600, in a folder that is 0700.
func Listen(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	if err := ownFolder(dir); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("control: %s is in the way of knotd's control socket (%s); remove it", path, fi.Mode().Type())
		}
		if c, err := net.Dial("unix", path); err == nil {
			_ = c.Close() // only a probe
			return nil, fmt.Errorf("control: a knotd already answers on %s", path)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("control: remove the stale socket: %w", err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = ln.Close() // the chmod error is the one to report
		return nil, fmt.Errorf("control: %w", err)
	}
	return ln, nil
}
