package state

import (
	"io/fs"
	"syscall"
)

// sysChangeTime returns the status change time from os's stat.
func sysChangeTime(info fs.FileInfo) int64 {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return st.Ctim.Nano()
}
