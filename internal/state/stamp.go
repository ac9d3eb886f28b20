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

// changeTime returns the status change time of the file described by
// info, in nanoseconds, or zero where the platform has none; a FileInfo
// whose Sys has a ChangeTime method answers itself.
func changeTime(info fs.FileInfo) int64 {
	if ct, ok := info.Sys().(interface{ ChangeTime() int64 }); ok {
		return ct.ChangeTime()
	}
	return sysChangeTime(info)
}
