//go:build windows

package ignore

import (
	"fmt"
	"io/fs"
	"os"
)

// openNoFollow opens the file at abs for reading, refusing a symbolic
// link at its name.
func openNoFollow(abs string) (*os.File, error) {
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link: knotd does not follow it", abs)
	}
	return os.Open(abs)
}
