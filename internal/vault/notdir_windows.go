//go:build windows

package vault

// isNotDir reports whether err says a path element is not a directory.
// Windows reports that case as "not found", which the callers handle.
func isNotDir(error) bool { return false }
