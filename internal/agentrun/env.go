package agentrun

import (
	"runtime"
	"slices"
	"strings"

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

// envKey is the identity of a variable name: the name itself, or its upper
// case on Windows, where names are case-insensitive.
func envKey(name string) string {
	if runtime.GOOS == "windows" {
		return strings.ToUpper(name)
	}
	return name
}

func isKnotVar(name string) bool {
	return slices.Contains(knotVars, envKey(name))
}

// buildEnv returns base without the removed names, then the agent's
// additions, then knotd's own variables. Later entries replace earlier ones
// with the same name, so each name appears once.
func buildEnv(base []string, add map[string]string, remove []string, knot [][2]string) []string {
	drop := make(map[string]bool, len(remove)+len(add)+len(knot))
	for _, k := range remove {
		drop[envKey(k)] = true
	}
	for k := range add {
		drop[envKey(k)] = true
	}
	for _, kv := range knot {
		drop[envKey(kv[0])] = true
	}
	env := make([]string, 0, len(base)+len(add)+len(knot))
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || drop[envKey(name)] {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range sortedKeys(add) {
		env = append(env, k+"="+add[k])
	}
	for _, kv := range knot {
		env = append(env, kv[0]+"="+kv[1])
	}
	return env
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
