// Package vault is the application: everything knotd does to one vault
// between the command line (cmd/knotd) and the single-purpose packages it
// drives (watcher, ignore, agentrun, transcript, tieoff, frontmatter,
// strand, state, config, device). The contract it keeps is
// docs/design.md (what happens on a change, the invariants).
//
// Its parts, each a type that owns its state, in one file or a small group
// of files; Vault (vault.go) holds them and newVault wires them:
//
//   - Vault (vault.go, root.go, lock.go): FindRoot finds the vault a folder
//     belongs to; Open locks it (package internal/statedir: one knotd per
//     vault, an OS file lock in the vault's folder of the state
//     directory), loads its configuration (package config), opens the
//     state store (package state), and finishes runs a crash left
//     journaled; its adopter adopts the strands of a vault knotd has never
//     seen and catches up on what changed while knotd was stopped.
//   - The pipeline of one strand (package vault/internal/pipeline;
//     pipelineHost in pipelinehost.go is all it asks of the Vault): fold,
//     look, decide, prepare, run, record. Start reading there: its
//     pipeline.go's first comment walks through it. ownwrites.go keeps
//     its writes into strands from the watcher while their work is under
//     way.
//   - The reconciler (package vault/internal/reconcile; reconHost in
//     reconhost.go is all it asks of the Vault): the one mechanism that
//     decides what happened to the strands (Created, Modified, Deleted,
//     moved, or nothing) by comparing the disk with their records. Watch
//     mode, --once, startup catch-up, overflow recovery and polling all go
//     through it. claims.go keeps a moved strand's old and new paths away
//     from the pipeline while the move is applied; file.go reads strands.
//   - Sync conflicts and resets (the reconciler's conflict.go, with
//     package vault/internal/conflict, which knows copies without touching
//     the vault; reset.go): conflict copies of a strand or tie-off folded
//     back, the pipeline's first step (Reconciler.Fold); knotd reset.
//   - Timed work (queue.go, with package scheduler and package
//     vault/internal/timing): one run at a time for a strand, at most one
//     follow-up for everything that arrived meanwhile, under a global
//     concurrency limit; follow-ups wait for the strand to be quiet,
//     retries for a pause that grows (timing.Later, on one timer over
//     timing.Dues); the watch loop
//     (package vault/internal/loop; loopHost in watch.go is all it asks
//     of the Vault) turns hints into work, its gone and new strands
//     waiting one quiet period and its retried hints and journaled
//     strands a pause that grows, all in timing.Dues; every retry waits
//     by one formula (timing.Backoff).
//   - Answering device (package vault/internal/answer; answerHost in
//     vault.go is all it asks of the Vault): which of the vault's devices
//     answers it (heartbeats in the vault, package device).
//   - The agent's file system (package vault/internal/agentfs;
//     agentFSHost in agentfshost.go is all it asks of the Vault): what an
//     ACP agent reads and writes through knotd, inside the vault and
//     never over a save of the user's.
//   - The control socket's adapter (package vault/internal/ctl, whose
//     Control is vault.Control; controlHost and whyNotRun in
//     controlhost.go): what knotd status, run, retry, pause, resume and
//     trust ask of the vault.
//   - Budget (package vault/internal/budget; budgetHost in vault.go) and
//     reloads (reloader, reload.go): the day's spend, and the
//     configuration loaded again when it changes.
//   - Transcripts (the pipeline's transcript.go; RunsDir in runsdir.go):
//     each run's machine record, written with package transcript from
//     run.started to tieoff.appended, with environment secrets masked (in
//     tie-off sections too).
//   - Passes (once.go, watch.go, dryrun.go, explain.go): Once (--once),
//     Watch (the daemon: watcher or poller hints, reconcile, scheduler; a
//     gone strand waits one quiet period so a move is not seen as a
//     delete), DryRun (--dry-run, which changes nothing) and ExplainPath
//     (--explain-ignore).
//   - Notifications (notify.go): what the user should hear of without
//     looking (a failed run, a note paused by a breaker or the budget) is
//     told to the Notifier of Options (package notify's sends it).
//   - Test seams (seams.go): what tests observe and the faults they inject
//     are a small interface the daemon calls; its own does nothing.
package vault
