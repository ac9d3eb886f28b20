//go:build windows

package transcript

// openFlags adds nothing on Windows, which has no O_NOFOLLOW; Prune checks
// that the file it opened is the one it listed.
const openFlags = 0

// removeWhileLocked: Windows cannot remove a file this process has open, so
// Prune releases the lock and closes the file just before removing it.
const removeWhileLocked = false
