// Package vault is the application: everything knotd does to one vault
// between the command line (cmd/knotd) and the single-purpose packages it
// drives (watcher, agentrun, tieoff, frontmatter, strand).
//
// Its parts, one file or small group of files each:
//
//   - Lock (lock.go): one knotd per vault. An OS file lock on
//     <vault>/.knot/lock whose content names the holder, so a second knotd
//     fails with a LockedError that says who holds the vault.
//   - Config (config.go, trust.go): the user's config file, the vault's
//     config file and the command-line flags, merged in that order. The
//     vault file is synced with the notes and may come from someone else,
//     so it may only define agents (commands knotd executes) if the user
//     has trusted that exact file with `knotd trust`.
//   - State store (store.go, tx.go, record.go, pending.go): what knotd
//     remembers per strand, in <vault>/.knot/state.db (bbolt): the stamp,
//     hash and content of the version it last processed, the session,
//     the turn count and the last run, plus a journal of finished runs
//     whose tie-off section is not yet committed, for crash recovery.
//   - Reconcile: the one mechanism that decides what happened to a strand
//     by comparing the file on disk with its record (Created, Modified,
//     Deleted or nothing). Watch mode, --once, startup catch-up, overflow
//     recovery and polling all go through it.
//   - Scheduler (scheduler.go): runs work per strand, at most one run at a
//     time for a strand, at most one follow-up for everything that arrived
//     meanwhile, under a global concurrency limit.
//   - Processor: one run of one strand: ensure its session, build the
//     prompt, run the agent, journal the reply, append the tie-off section,
//     commit the state and re-check for edits made during the run.
//
// The state file format is described in store.go; the lock file format in
// lock.go; the config and trust file formats in config.go and trust.go.
package vault
