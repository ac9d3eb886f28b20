//go:build unix

package vault

import (
	"io/fs"
	"syscall"
)

// sameDevice reports whether a and b are on the same file system.
func sameDevice(a, b fs.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return !ok1 || !ok2 || sa.Dev == sb.Dev
}
