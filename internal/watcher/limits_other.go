//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package watcher

import (
	"fmt"
	"time"
)

// kqueueFDs reports whether each watched file costs a file descriptor: not
// with this platform's backend.
const kqueueFDs = false

// limitMessage is the one log line written when the system refuses more
// watches.
func limitMessage(err error, watched int, poll time.Duration) string {
	return fmt.Sprintf("watcher: cannot watch more directories (%v; knotd watches %d directories); "+
		"polling the directories it could not watch every %s instead. Fix: free system resources, "+
		"or use --poll for very large vaults", err, watched, poll)
}

// fdLimit is not known on this platform.
func fdLimit() (uint64, bool) { return 0, false }
