//go:build linux

package watcher

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// kqueueFDs reports whether each watched directory and each file in it
// costs a file descriptor (kqueue). inotify watches cost none.
const kqueueFDs = false

// limitMessage is the one log line written when the kernel refuses more
// watches: what ran out, the current limits and count, and the fix.
func limitMessage(err error, watched int, poll time.Duration) string {
	return inotifyLimitMessage(errors.Is(err, syscall.EMFILE),
		readProcValue("/proc/sys/fs/inotify/max_user_watches"),
		readProcValue("/proc/sys/fs/inotify/max_user_instances"),
		watched, poll)
}

// inotifyLimitMessage composes limitMessage from the values read; instances
// says the instance limit (not the watch limit) was hit.
func inotifyLimitMessage(instances bool, maxWatches, maxInstances string, watched int, poll time.Duration) string {
	what, key, value := "inotify watch limit reached", "fs.inotify.max_user_watches", "524288"
	if instances {
		what, key, value = "inotify instance limit reached (or no file descriptors left)", "fs.inotify.max_user_instances", "1024"
	}
	return fmt.Sprintf("watcher: %s (fs.inotify.max_user_watches=%s, fs.inotify.max_user_instances=%s; knotd watches %d directories); "+
		"polling the directories it could not watch every %s instead, which is slower and costs more. "+
		"Fix: sudo sysctl %s=%s, and to keep it after a reboot: echo %s=%s | sudo tee /etc/sysctl.d/90-knotd-inotify.conf",
		what, maxWatches, maxInstances, watched, poll, key, value, key, value)
}

// readProcValue reads one number from a /proc/sys file, or says why not.
func readProcValue(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// fdLimit is not needed with inotify.
func fdLimit() (uint64, bool) { return 0, false }
