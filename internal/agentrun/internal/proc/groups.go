package proc

import "time"

// RunIDEnv is the environment variable that holds the run id
// (agentrun.EnvRunID): an agent's descendants inherit it, which tells them
// from processes of a later group with the same number.
const RunIDEnv = "KNOT_RUN_ID"

// Group is an agent's process group, recorded while the agent runs so
// that a knotd killed meanwhile (SIGKILL, a crash) can end what the agent
// left running at its next start (EndOrphans). The group id alone is not
// enough: once the group is gone its number can be reused, so the record
// also says how to tell the group from a later one with the same number.
type Group struct {
	// ID is the group id: the agent's pid (it leads its group).
	ID int
	// Start is when the agent started, as the system counts it (on Linux
	// /proc/<pid>/stat field 22, clock ticks since boot): a later process
	// with the same pid started later.
	Start uint64
	// Boot identifies the boot the agent ran in (on Linux
	// /proc/sys/kernel/random/boot_id): after a reboot nothing of the
	// group is left.
	Boot string
	// Run is the run id, which the agent and its descendants find in
	// their environment (RunIDEnv): it tells a member of the group whose
	// leader is gone from a process of a later group with the same id.
	Run string
}

// GroupRecorder records the process groups of the agents a Runner runs:
// Started once the agent started, Ended once its group is gone (the run
// kills what is left of it). Errors are the recorder's to report.
type GroupRecorder interface {
	Started(Group)
	Ended(Group)
}

// Orphan says what EndOrphans did with one recorded group.
type Orphan struct {
	Group
	// Ended is how many processes of the group were running and were
	// signalled to end (SIGTERM, then SIGKILL after the grace period).
	Ended int
	// Killed is how many of them needed SIGKILL.
	Killed int
	// Left, when set, says why processes that may belong to the group
	// were left running (the group could not be verified as the
	// recorded one).
	Left string
	// Err is an error reading the system's processes or signalling them.
	Err error
}

// orphanPoll is how often EndOrphans looks whether a signalled group is
// gone.
const orphanPoll = 20 * time.Millisecond
