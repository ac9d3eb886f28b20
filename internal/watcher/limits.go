package watcher

import (
	"errors"
	"syscall"
)

// isLimitError reports whether err says a limit on watches or file
// descriptors is exhausted: inotify's max_user_watches (ENOSPC) or
// max_user_instances (EMFILE), or the per-process or system-wide
// descriptor limit that kqueue runs into (EMFILE, ENFILE).
func isLimitError(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
