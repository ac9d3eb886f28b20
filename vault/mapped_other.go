//go:build !linux

package vault

// dropMapped does nothing here: the pages of the state file's mapping are
// left to the operating system.
func (s *Store) dropMapped() error { return nil }
