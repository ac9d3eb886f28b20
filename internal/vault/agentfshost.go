package vault

import (
	"log/slog"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/vault/internal/agentfs"
	"github.com/knotd/knotd/internal/vaultfs"
)

// newAgentFS returns the file system for a run of agent (package
// vault/internal/agentfs).
func (v *Vault) newAgentFS(agent agentrun.Agent) *agentfs.FS {
	return agentfs.New(agentFSHost{v}, agentfs.Options{FS: v.fs, Root: v.root, Dry: v.dry, Permissions: agent.Permissions})
}

// agentFSHost is what the agent's file system asks of the vault: the
// limit in force, its logger, what the ignore files, the rules and the
// folders on the way keep from agents, and the settling of a replace's
// guard, as the session keeper settles its own.
type agentFSHost struct{ v *Vault }

func (h agentFSHost) MaxSize() int64    { return h.v.config().MaxStrandSize }
func (h agentFSHost) Log() *slog.Logger { return h.v.log }

func (h agentFSHost) Ignored(rel string) (bool, string, error) {
	if err := h.v.rules.Load(h.v.root, rel); err != nil {
		return false, "", err
	}
	ign, why := h.v.rules.Explain(rel)
	return ign, why, nil
}

func (h agentFSHost) LinkedDir(rel string) (linked, nested string, err error) {
	return h.v.recon.LinkedDir(rel)
}

func (h agentFSHost) KeptFromAgents(rel string) (bool, string) {
	sc := h.v.scopeOf(rel)
	return sc.Off, sc.Why
}

func (h agentFSHost) SettleGuard(rel string, g *vaultfs.Guard) bool {
	return h.v.pipe.SettleGuard(rel, g)
}
