//go:build windows

package vault

import "io/fs"

// sameDevice is true on Windows, whose FileInfo does not say the volume;
// the search stops at the volume's root all the same.
func sameDevice(fs.FileInfo, fs.FileInfo) bool { return true }
