package control

import (
	"fmt"
	"os"
)

// ownFolder checks that dir is a directory. On Windows a folder under
// %LocalAppData% is the user's own by its access list, which Go does not
// read.
func ownFolder(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s must be a folder", ErrNotOurs, dir)
	}
	return nil
}

// ownSocket accepts the socket: its folder is the user's own (see
// ownFolder).
func ownSocket(string, os.FileInfo) error { return nil }
