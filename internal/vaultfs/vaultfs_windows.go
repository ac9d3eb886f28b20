//go:build windows

package vaultfs

import "io/fs"

// openFlags are added to every open; Windows has no FIFOs to block on.
const openFlags = 0

// links is 1 on Windows, whose FileInfo does not carry a link count.
func links(fs.FileInfo) uint64 { return 1 }

// IsNotDir is false on Windows, which reports a file on the way to a path
// as the path not existing.
func IsNotDir(error) bool { return false }
