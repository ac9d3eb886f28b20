//go:build unix && !linux

package realcli

import (
	"errors"
	"syscall"
)

// liveGroup reports whether any process of the group pgid is left (signal
// 0 to the group), as the group itself: without /proc its members are not
// listed. Zombies count here; the system's init reaps them.
func liveGroup(pgid int) ([]int, error) {
	err := syscall.Kill(-pgid, 0)
	switch {
	case errors.Is(err, syscall.ESRCH):
		return nil, nil
	case err != nil && !errors.Is(err, syscall.EPERM):
		return nil, err
	}
	return []int{-pgid}, nil
}
