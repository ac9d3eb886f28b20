//go:build !linux && !darwin && !freebsd && !netbsd

package statedir

import "io/fs"

// birthTime is unknown here (0): the path tells a moved vault's folder.
func birthTime(string, fs.FileInfo) int64 { return 0 }
