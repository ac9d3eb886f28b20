package vault

import (
	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/state"
)

// agentGroups records in the state store the process group of each agent
// while it runs (agentrun.GroupRecorder), so that what a knotd killed
// meanwhile (SIGKILL, a crash) left running is ended at the next start
// (endOrphans). A --dry-run records nothing.
type agentGroups struct{ v *Vault }

func (a agentGroups) Started(g agentrun.Group) {
	if a.v.dry || a.v.store == nil {
		return
	}
	err := a.v.store.Update(func(tx *state.Tx) error {
		return tx.PutGroup(state.Group{ID: g.ID, Start: g.Start, Boot: g.Boot, Run: g.Run})
	})
	if err != nil {
		a.v.log.Error("cannot record the agent's process group (if knotd is killed while it runs, what it leaves running is not ended at the next start)",
			"run", g.Run, "group", g.ID, "err", err)
	}
}

func (a agentGroups) Ended(g agentrun.Group) {
	if a.v.dry || a.v.store == nil {
		return
	}
	if err := a.v.store.Update(func(tx *state.Tx) error { return tx.DeleteGroup(g.ID) }); err != nil {
		a.v.log.Error("cannot remove the record of the agent's process group, which is gone (the next start finds nothing of it left)",
			"run", g.Run, "group", g.ID, "err", err)
	}
}

// endOrphans ends what agents of a knotd killed while they ran left
// running (agentrun.EndOrphans: only groups verified to be the ones
// recorded), says so, and forgets the records.
func (v *Vault) endOrphans() error {
	var gs []state.Group
	err := v.store.View(func(tx *state.Tx) (err error) {
		gs, err = tx.Groups()
		return err
	})
	if err != nil || len(gs) == 0 {
		return err
	}
	groups := make([]agentrun.Group, len(gs))
	for i, g := range gs {
		groups[i] = agentrun.Group{ID: g.ID, Start: g.Start, Boot: g.Boot, Run: g.Run}
	}
	for _, o := range agentrun.EndOrphans(groups, agentrun.DefaultGrace) {
		switch {
		case o.Err != nil:
			v.log.Error("cannot end what an agent left running when knotd was killed", "run", o.Run, "group", o.ID, "err", o.Err)
		case o.Left != "":
			v.log.Warn("left running processes that may be what an agent left when knotd was killed: they cannot be verified as the agent's", "run", o.Run, "group", o.ID, "why", o.Left)
		case o.Ended > 0:
			v.log.Warn("ended what an agent left running when knotd was killed while it ran", "run", o.Run, "group", o.ID, "processes", o.Ended, "killed", o.Killed)
		}
	}
	return v.store.Update(func(tx *state.Tx) error {
		for _, g := range gs {
			if err := tx.DeleteGroup(g.ID); err != nil {
				return err
			}
		}
		return nil
	})
}
