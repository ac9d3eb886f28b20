//go:build !linux && !darwin && !freebsd && !netbsd

package reconcile

import (
	"io/fs"
	"os"
)

// birthTime is unknown here (0).
func birthTime(*os.File, fs.FileInfo) int64 { return 0 }
