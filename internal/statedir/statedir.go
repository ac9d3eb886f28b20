// Package statedir keeps what is the machine's own, out of the vault: for
// each vault, a folder in the user's state directory with knotd's state
// store and its journal, the lock that keeps a second knotd out, the run
// transcripts and the llm preset's logs. A vault is shared ground, synced
// to other devices and tracked by git; these files are this machine's
// cache, rebuildable from the vault's tie-offs, and would only make sync
// conflicts and dirty trees there.
//
// The layout, under Home():
//
//	device.json                   this device's identity (see Device)
//	vaults.lock                   held while a vault's folder is found or made
//	vaults/<name>-<8 hex>/        one folder per vault (see Folder):
//	    vault.json                which vault the folder belongs to
//	    lock                      held by the knotd answering the vault
//	    running                   there while a knotd uses the folder
//	    state.db                  the state store (package state)
//	    runs/<run-id>.jsonl       run transcripts (package transcript)
//	    llm/<session>.db          the llm preset's private logs
//
// A vault's folder is found again when the vault folder is moved or
// renamed on disk: it is matched by the vault directory's identity on its
// file system (device and inode), not by its path. A directory that
// replaced the vault at its path (a fresh clone, a restored backup) is
// another directory and gets a folder of its own, rebuilt from its
// tie-offs. On Windows, whose file information carries no inode, the
// path is the identity.
//
// Every file here is mode 0600, every directory 0700.
package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// File names inside a vault's folder.
const (
	StateFile = "state.db"
	LockFile  = "lock"
	runsDir   = "runs"
	llmDir    = "llm"
	infoFile  = "vault.json"
	// runningFile is there while a knotd uses the folder.
	runningFile = "running"
)

// errNoHome is wrapped when no state directory can be found for the user.
var errNoHome = errors.New("statedir: no state directory")

// Home returns knotd's state directory: $XDG_STATE_HOME/knotd when
// XDG_STATE_HOME is set to an absolute path (on every platform, as the XDG
// specification reads); otherwise ~/.local/state/knotd on Linux and other
// Unix systems, ~/Library/Application Support/knotd on macOS and
// %LocalAppData%\knotd on Windows.
func Home() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "knotd"), nil
	}
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LocalAppData"); filepath.IsAbs(d) {
			return filepath.Join(d, "knotd"), nil
		}
		return "", fmt.Errorf("%w: %%LocalAppData%% is not set", errNoHome)
	case "darwin", "ios":
		d, err := os.UserConfigDir() // ~/Library/Application Support
		if err != nil {
			return "", fmt.Errorf("%w: %w", errNoHome, err)
		}
		return filepath.Join(d, "knotd"), nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("%w: %w (set XDG_STATE_HOME)", errNoHome, err)
	}
	return filepath.Join(h, ".local", "state", "knotd"), nil
}
