//go:build darwin || freebsd || netbsd

package statedir

import (
	"io/fs"
	"syscall"
)

// birthTime returns the directory's creation time in nanoseconds, or 0.
func birthTime(_ string, fi fs.FileInfo) int64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return st.Birthtimespec.Nano()
}
