//go:build darwin || freebsd || netbsd

package reconcile

import (
	"io/fs"
	"os"
	"syscall"
)

// birthTime returns the file's creation time in nanoseconds, or 0.
func birthTime(_ *os.File, fi fs.FileInfo) int64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	return st.Birthtimespec.Nano()
}
