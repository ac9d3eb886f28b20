//go:build windows

package statedir

import "io/fs"

// noFollow is zero on Windows.
const noFollow = 0

// dirIdentity is unknown on Windows: the path identifies a vault there.
func dirIdentity(fs.FileInfo) identity { return identity{} }
