package proc

import (
	"maps"
	"runtime"
	"slices"
	"strings"
)

// EnvKey is the identity of a variable name: the name itself, or its upper
// case on Windows, where names are case-insensitive.
func EnvKey(name string) string {
	if runtime.GOOS == "windows" {
		return strings.ToUpper(name)
	}
	return name
}

// Environ returns base without the removed names, then the agent's
// additions (sorted by name), then knotd's own variables. Later entries replace earlier ones
// with the same name, so each name appears once.
func Environ(base []string, add map[string]string, remove []string, knot [][2]string) []string {
	drop := make(map[string]bool, len(remove)+len(add)+len(knot))
	for _, k := range remove {
		drop[EnvKey(k)] = true
	}
	for k := range add {
		drop[EnvKey(k)] = true
	}
	for _, kv := range knot {
		drop[EnvKey(kv[0])] = true
	}
	env := make([]string, 0, len(base)+len(add)+len(knot))
	for _, kv := range base {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || drop[EnvKey(name)] {
			continue
		}
		env = append(env, kv)
	}
	for _, k := range slices.Sorted(maps.Keys(add)) {
		env = append(env, k+"="+add[k])
	}
	for _, kv := range knot {
		env = append(env, kv[0]+"="+kv[1])
	}
	return env
}
