//go:build unix

package vaultfs

import (
	"errors"
	"io/fs"
	"os"
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

func syncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
