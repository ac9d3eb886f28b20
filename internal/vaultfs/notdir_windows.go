//go:build windows

package vaultfs

// IsNotDir reports whether err says a path element is not a directory.
// Windows reports that case as "not found", which the callers handle.
func IsNotDir(error) bool { return false }
