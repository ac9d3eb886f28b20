//go:build unix

package durable

import (
	"errors"
	"os"
	"syscall"
)

// SyncDir syncs the directory dir, so that a create, rename or remove in
// it is durable. File systems that cannot sync a directory (EINVAL,
// ENOTSUP) are not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return syncClose(d)
}

// SyncDirIn is SyncDir for the directory dir (a path in root's syntax)
// inside root.
func SyncDirIn(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	return syncClose(d)
}

// syncClose syncs and closes the open directory d.
func syncClose(d *os.File) error {
	err := d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
