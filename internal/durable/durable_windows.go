//go:build windows

package durable

import "os"

// SyncDir does nothing on Windows, which cannot open a directory for
// syncing; NTFS journals its directory entries.
func SyncDir(string) error { return nil }

// SyncDirIn does nothing on Windows, like SyncDir.
func SyncDirIn(*os.Root, string) error { return nil }
