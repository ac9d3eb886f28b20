//go:build windows

package state

import "io/fs"

// sysFileID returns zero on Windows: the FileInfo from Lstat carries no file
// index, and opening every file to ask for one would defeat the purpose of
// a cheap check. Reconcile then relies on size and modification time.
func sysFileID(fs.FileInfo) (inode, device uint64) { return 0, 0 }

// sysChangeTime returns zero on Windows: its FileInfo has no status change
// time.
func sysChangeTime(fs.FileInfo) int64 { return 0 }
