//go:build unix

package state

import (
	"io/fs"
	"syscall"
)

// sysFileID returns the inode and device number from os's stat.
func sysFileID(info fs.FileInfo) (inode, device uint64) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Ino), uint64(st.Dev) // Dev is int32 on darwin
}
