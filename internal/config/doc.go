// Package config reads, merges and validates knotd's configuration: the
// user's config file, the vault's config file (<vault>/.knot/config.yaml)
// and the command-line flags (Settings), merged by Load into one Config.
// It also keeps the trust records of vault config files (Trust): a vault
// config is synced with the notes and may come from someone else, so it
// may define agents (commands knotd executes) only if the user trusted
// that exact file with `knotd trust`.
//
// The config file format is described by Settings and the merge and trust
// rules by Config; the trust file format in trust.go. Users read every
// key, and what a vault config may do, in docs/configuration.md.
package config
