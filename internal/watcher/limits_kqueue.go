//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package watcher

import (
	"fmt"
	"strconv"
	"syscall"
	"time"
)

// kqueueFDs reports whether each watched directory and each file in it
// costs a file descriptor: with kqueue it does (fsnotify opens one for
// every entry of a watched directory, to see writes to files).
const kqueueFDs = true

// limitMessage is the one log line written when the kernel refuses more
// watches: what ran out, the current limit and count, and the fix.
func limitMessage(err error, watched int, poll time.Duration) string {
	limit := "unknown"
	if n, ok := fdLimit(); ok {
		limit = strconv.FormatUint(n, 10)
	}
	return kqueueLimitMessage(err, limit, watched, poll)
}

// kqueueLimitMessage composes limitMessage from the values read.
func kqueueLimitMessage(err error, limit string, watched int, poll time.Duration) string {
	return fmt.Sprintf("watcher: out of file descriptors (%v): kqueue needs one per watched directory and per file in it "+
		"(ulimit -n is %s; knotd watches %d directories); polling the directories it could not watch every %s instead. "+
		"Fix: raise the limit before starting knotd (ulimit -n 65536 in its shell, or SoftResourceLimits/NumberOfFiles "+
		"in its launchd plist), or use --poll for very large vaults",
		err, limit, watched, poll)
}

// fdLimit returns the soft limit on open file descriptors.
func fdLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return uint64(rl.Cur), true
}
