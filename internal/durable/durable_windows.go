//go:build windows

package durable

// SyncDir does nothing on Windows, which cannot open a directory for
// syncing; NTFS journals its directory entries.
func SyncDir(string) error { return nil }
