package state

import "io/fs"

// fileID returns the inode and device number of the file described by
// info, or zeros where the platform's FileInfo has none (Windows). A
// FileInfo whose Sys has an Ident method (the watcher's own stat, which
// looked at the file relative to its open directory) answers itself.
func fileID(info fs.FileInfo) (inode, device uint64) {
	if id, ok := info.Sys().(interface{ Ident() (inode, device uint64) }); ok {
		return id.Ident()
	}
	return sysFileID(info)
}
