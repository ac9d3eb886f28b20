//go:build unix

package control

import (
	"fmt"
	"os"
	"syscall"
)

// ownFolder refuses a socket folder that another user could get into:
// not a directory of this user's with mode 0700 (the shared temporary
// directory's short folder could have been made by someone else), or a
// symbolic link. Both ends check it: the daemon before it listens there,
// a client before it connects.
func ownFolder(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%w: %s must be a folder of your own that only you can open (mode 0700); another user may have made it: have it removed (an administrator can), or set TMPDIR to a folder of your own for knotd and its commands", ErrNotOurs, dir)
	}
	return nil
}

// ownSocket refuses a socket file that is not this user's.
func ownSocket(path string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%w: %s belongs to another user", ErrNotOurs, path)
	}
	return nil
}
