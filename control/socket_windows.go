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
		return fmt.Errorf("control: %s must be a folder", dir)
	}
	return nil
}
