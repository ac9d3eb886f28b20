//go:build unix && !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package state

import "io/fs"

// sysChangeTime returns zero where knotd does not read the change time.
func sysChangeTime(fs.FileInfo) int64 { return 0 }
