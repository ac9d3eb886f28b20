//go:build unix

package statedir

import (
	"io/fs"
	"syscall"
)

// noFollow keeps an open from following a symbolic link at the name.
const noFollow = syscall.O_NOFOLLOW

// dirIdentity returns a directory's device and inode numbers.
func dirIdentity(fi fs.FileInfo) identity {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return identity{}
	}
	return identity{device: uint64(st.Dev), inode: uint64(st.Ino)} // their types differ between platforms
}
