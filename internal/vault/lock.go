package vault

import "github.com/knotd/knotd/internal/statedir"

// ErrLocked is wrapped by LockedError: another knotd holds the vault.
var ErrLocked = statedir.ErrLocked

// LockedError reports that another knotd holds the vault, and names it.
// The lock is an OS file lock in the vault's folder of the state directory
// (see package statedir), so it holds wherever knotd is started: in the
// vault, in a subfolder of it, or at the vault's new path after a move.
type LockedError = statedir.LockedError
