// Package state is knotd's memory of a vault: what it last processed of
// each strand (the stamp, hash and content of that version, the session,
// the turns and the last run), the journal of finished runs whose tie-off
// section is not yet committed (for crash recovery), and the notices it
// must give only once. It is one bbolt file in the vault's folder of the
// state directory (package statedir), owned by the knotd that holds the
// vault's lock.
//
// The state is the machine's cache, never the truth: the vault's tie-offs
// are (their run markers record what each section answered), and knotd
// rebuilds from them what a missing or damaged store forgot. So a damaged
// store is an error that says so, never a panic (bbolt's panics, and
// faults on its memory mapping, are turned into errors wrapping
// ErrCorrupt), and Check verifies every invariant the store keeps.
//
// Every change is a transaction (Update); reads are consistent snapshots
// (View). The file format is described in store.go; where the file lives,
// and what knotd does with a damaged one, in docs/files.md.
package state
