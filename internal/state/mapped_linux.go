package state

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// DropMapped tells the kernel that this process no longer needs the pages
// of the state file it has mapped (madvise MADV_DONTNEED on bbolt's shared,
// read-only mapping). The file's data stays in the page cache and a later
// read maps it again, so nothing changes but the resident set: a pass over
// every record, or an open that rebuilt the free-page list, leaves the
// pages it read mapped otherwise, and an idle daemon would carry them for
// weeks.
//
// This is the one place in knotd that relies on how bbolt maps its file
// (DB.Info().Data is the mapping's start, and the transaction's Size is
// within it), which bbolt does not promise: TestStore_DropMappedCoversBboltsMapping
// fails when that changes. It stays because it is what keeps an idle
// daemon small: in the bench, 12 s after start-up at 100,000 strands,
// 20 MiB resident (7.5 MiB of it mapped files) against 71 to 143 MiB
// (58 to 130 MiB mapped) without it; at 10,000 strands 12 against 17 to
// 32 MiB.
func (s *Store) DropMapped() error {
	return s.db.View(func(tx *bolt.Tx) error {
		// A read transaction holds bbolt's mapping lock: the mapping
		// cannot be moved or unmapped until it ends.
		data, size := s.db.Info().Data, tx.Size()
		if data == 0 || size <= 0 {
			return nil
		}
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, data, uintptr(size), unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("state: release the mapped pages of %s: %w", s.path, errno)
		}
		return nil
	})
}
