package vault

import (
	"io/fs"

	"github.com/knotd/knotd/watcher"
)

// fileID returns the inode and device number of the file described by
// info, or zeros where the platform's FileInfo has none (Windows).
func fileID(info fs.FileInfo) (inode, device uint64) {
	if id, ok := info.Sys().(watcher.FileID); ok {
		return id.Inode, id.Device // the watcher looked at the file itself
	}
	return sysFileID(info)
}
