//go:build !linux

package proc

import "time"

// groupOf cannot tell a process group from a later one with the same
// number on this system (no start time of a process is read here), so
// agents' groups are not recorded: nothing is ended that could be
// someone else's.
func groupOf(int, string) (Group, bool) { return Group{}, false }

// EndOrphans does nothing on this system: no group is recorded (groupOf).
// An agent's descendants that outlive a knotd killed with SIGKILL are left
// running.
func EndOrphans([]Group, time.Duration) []Orphan { return nil }
