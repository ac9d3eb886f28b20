//go:build !linux

package ignore

import (
	"io/fs"
	"os"
)

// openDir opens the directory abs for listing.
func openDir(abs string, _ bool) (*os.File, error) { return os.Open(abs) }

// statAt returns nil here: entries keep os's own Info.
func statAt(*os.File) func(name string) (fs.FileInfo, error) { return nil }
