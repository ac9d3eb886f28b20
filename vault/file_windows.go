//go:build windows

package vault

// openFlags: Windows has no O_NOFOLLOW or FIFOs; callers check the file
// mode after opening.
const openFlags = 0

// isNotDir reports whether err says a path element is not a directory.
// Windows reports that case as "not found", which the callers handle.
func isNotDir(error) bool { return false }
