//go:build !linux

package state

// DropMapped does nothing here: the pages of the state file's mapping are
// left to the operating system.
func (s *Store) DropMapped() error { return nil }
