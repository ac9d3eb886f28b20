// Package watcher tells knotd which paths of a vault to look at again, and
// when: it watches the vault's directories with fsnotify (or polls them),
// leaves out what package ignore's rules ignore, waits until each path
// has settled (the debounce), and sends Hints on a channel. It says
// "something happened at P", never what happened: the consumer (the
// vault's reconcile) compares the disk with its records and decides.
// Hints may be repeated or spurious; they are never missing.
//
// # Output contract
//
// Watcher.Run and Poller.Run send Hints until their context ends, then
// close the channel. A Hint is a file path (Hint{Path: "notes/a.md"}), a
// directory whose subtree must be reconciled (Hint{Path: "notes", Dir:
// true}: it was removed, renamed away or replaced, or its ignore files
// changed), or the whole vault (Hint{Dir: true}): at start, after the
// kernel lost events (fsnotify.ErrEventOverflow or any other watcher
// error), when too many paths are pending at once, and on every Poller
// tick. File hints are only sent for files that are not ignored and that
// Watcher.Filter accepts.
//
// # Watching
//
// Directories are watched one by one, never single files, and only those
// the ignore rules do not ignore: an ignored directory never gets a watch. When a
// directory appears (created, or renamed into the vault), its watch is
// added first and then it is walked, so files written into it before the
// watch existed still get Hints (mkdir -p a/b/c && echo x > a/b/c/x.md).
// Chmod-only events are dropped. Each path's Hint waits for a quiet period
// (Watcher.Quiet, 2s) with no new event, but no longer than a maximum wait
// (Watcher.MaxWait, 15s) after its first event, so a file written
// continuously still gets Hints.
//
// When the kernel refuses more watches (inotify's
// fs.inotify.max_user_watches, or kqueue's file descriptors), the watcher
// logs one message naming the limit, its current value and the fix, and
// polls the directories it could not watch every 10 seconds,
// comparing their listings (names, sizes, modification times). On macOS
// kqueue opens a descriptor for every watched directory and every file in
// it; the watcher estimates the count and warns once when it nears the
// process limit. Poller replaces watching altogether (knotd --poll) for
// file systems without notifications.
//
// # Ignore rules
//
// What is ignored is package ignore's to decide (Watcher.Rules): an
// ignored directory is never watched, an ignored file never hinted. The
// watcher keeps the rules current: when an ignore file (.gitignore,
// .ignore, .knotignore) changes, the directory's rescan rereads it and
// sends a directory Hint, so newly un-ignored files are reconciled; the
// rules of a directory that is gone or now ignored are forgotten.
//
// Where the watcher sits in the flow of a change: docs/design.md#what-happens-on-a-change;
// its limits and what to do about them: docs/operating.md#watch-limits.
package watcher
