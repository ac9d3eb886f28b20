package agentrun

import (
	"time"

	"github.com/knotd/knotd/internal/agentrun/internal/proc"
)

// Group is an agent's process group, recorded while the agent runs so
// that a knotd killed meanwhile (SIGKILL, a crash) can end what the agent
// left running at its next start (EndOrphans): see proc.Group.
type Group = proc.Group

// GroupRecorder records the process groups of the agents a Runner runs:
// Started once the agent started, Ended once its group is gone (the run
// kills what is left of it). Errors are the recorder's to report.
type GroupRecorder = proc.GroupRecorder

// Orphan says what EndOrphans did with one recorded group.
type Orphan = proc.Orphan

// EndOrphans ends what is left running of agents' process groups that a
// knotd killed while they ran recorded, when each is verified to be the
// recorded one (see proc.EndOrphans). It returns what it did with each
// group.
func EndOrphans(groups []Group, grace time.Duration) []Orphan {
	return proc.EndOrphans(groups, grace)
}
