package agentrun

import (
	"slices"

	"github.com/knotd/knotd/internal/agentrun/internal/proc"
)

// The environment variables knotd sets for every agent run. Agents may read
// them; configuration cannot set or remove them.
const (
	EnvVault   = "KNOT_VAULT"   // absolute path of the vault root
	EnvStrand  = "KNOT_STRAND"  // vault-relative path of the strand
	EnvEvent   = "KNOT_EVENT"   // Created, Modified or Deleted
	EnvSession = "KNOT_SESSION" // the strand's session UUID
	EnvRunID   = proc.RunIDEnv  // the run id
)

var knotVars = []string{EnvVault, EnvStrand, EnvEvent, EnvSession, EnvRunID}

func isKnotVar(name string) bool {
	return slices.Contains(knotVars, proc.EnvKey(name))
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
