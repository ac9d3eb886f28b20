//go:build unix

package vaultfs

import (
	"errors"
	"io/fs"
	"syscall"
)

// openFlags are added to every open: never block on a FIFO.
const openFlags = syscall.O_NONBLOCK

// links returns the number of hard links of the file fi describes.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink) // uint16 on darwin
	}
	return 1
}

// IsNotDir reports whether err says that a component of a path, taken for
// a directory, is not one (ENOTDIR).
func IsNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
