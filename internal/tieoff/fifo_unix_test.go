//go:build unix

package tieoff

import (
	"os"
	"syscall"
)

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o644) }

// links returns the number of hard links of the file fi describes.
func links(fi os.FileInfo) uint64 { return uint64(fi.Sys().(*syscall.Stat_t).Nlink) }
