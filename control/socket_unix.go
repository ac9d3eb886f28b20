//go:build unix

package control

import (
	"fmt"
	"os"
	"syscall"
)

// ownFolder refuses a socket folder that another user could get into:
// not a directory of this user's with mode 0700 (the shared temporary
// directory's short folder could have been made by someone else).
func ownFolder(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("control: %s must be a folder of your own that only you can open (mode 0700)", dir)
	}
	return nil
}
