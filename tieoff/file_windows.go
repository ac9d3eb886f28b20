//go:build windows

package tieoff

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// openFlags adds nothing on Windows.
const openFlags = 0

// checkNotLink refuses a symbolic link (or junction) at path. Windows has
// no O_NOFOLLOW, so this is a check before the open.
func checkNotLink(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 {
		return fmt.Errorf("%w: %s is a link", ErrNotRegular, path)
	}
	return nil
}

func isLinkErr(error) bool { return false }
