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
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
