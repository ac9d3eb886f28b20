// Package vault is the application: everything knotd does to one vault
// between the command line (cmd/knotd) and the single-purpose packages it
// drives (watcher, agentrun, tieoff, frontmatter, strand).
//
// Its parts, one file or small group of files each:
//
//   - Lock (lock.go): one knotd per vault. An OS file lock on
//     <vault>/.knot/lock whose content names the holder, so a second knotd
//     fails with a LockedError that says who holds the vault.
//   - Config: loaded with package config (the user's and the vault's
//     config files, the command-line flags, and the trust of vault config
//     files); Open refuses a vault whose configuration does not load.
//   - State store (store.go, tx.go, record.go, pending.go): what knotd
//     remembers per strand, in <vault>/.knot/state.db (bbolt): the stamp,
//     hash and content of the version it last processed, the session,
//     the turn count and the last run, plus a journal of finished runs
//     whose tie-off section is not yet committed, for crash recovery.
//   - Vault (vault.go): Open validates and locks the vault, loads the
//     config, opens the store, finishes runs a crash left journaled, and
//     adopts the strands of a vault knotd has never seen.
//   - Reconcile (reconcile.go, file*.go): the one mechanism that decides what happened to a strand
//     by comparing the file on disk with its record (Created, Modified,
//     Deleted or nothing). Watch mode, --once, startup catch-up, overflow
//     recovery and polling all go through it.
//   - Scheduler (scheduler.go): runs work per strand, at most one run at a
//     time for a strand, at most one follow-up for everything that arrived
//     meanwhile, under a global concurrency limit.
//   - Processor (processor.go, run.go): one run of one strand: decide the
//     event from the disk, ensure its session, build the prompt, run the
//     agent, journal the reply, append the tie-off section, commit the
//     state and re-check for edits made during the run. claims.go keeps a
//     moved strand's old and new paths away from the processor while the
//     move is applied.
//   - Transcripts (transcript.go): each run's machine record,
//     <vault>/.knot/runs/<run-id>.jsonl, written with package transcript
//     from run.started to tieoff.appended, with environment secrets
//     masked (in tie-off sections too).
//   - Passes (daemon.go, watch.go, dryrun.go, explain.go): Once (--once),
//     Watch (the daemon: watcher or poller hints, reconcile, scheduler; a
//     gone strand waits one quiet period so a move is not seen as a
//     delete), DryRun (--dry-run, which changes nothing) and ExplainPath
//     (--explain-ignore).
//
// The state file format is described in store.go; the lock file format in
// lock.go; the config and trust file formats in package config.
package vault
