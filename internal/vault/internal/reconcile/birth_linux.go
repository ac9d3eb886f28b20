package reconcile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// birthTime returns the creation time of the open file f in nanoseconds
// (statx), or 0 where the file system does not record one.
func birthTime(f *os.File, _ fs.FileInfo) int64 {
	var stx unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_BTIME, &stx); err != nil || stx.Mask&unix.STATX_BTIME == 0 {
		return 0
	}
	return stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec)
}
