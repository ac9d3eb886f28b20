// Package kit is what every agent package under agents/ builds on: the
// decoder framework that turns an agent CLI's output into the run
// record's content blocks (Decoder, Decoded, Normalizer) and the JSON
// helpers its normalizers share. It sits below both agentrun and the agent
// packages, so that an agent's folder holds everything about that agent
// without an import cycle.
package kit
