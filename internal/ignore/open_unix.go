//go:build unix

package ignore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// openNoFollow opens the file at abs for reading without following a
// symbolic link at its name (an error saying so) and without blocking on
// a FIFO.
func openNoFollow(abs string) (*os.File, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK) {
		return nil, fmt.Errorf("%s is a symbolic link: knotd does not follow it", abs)
	}
	return f, err
}
