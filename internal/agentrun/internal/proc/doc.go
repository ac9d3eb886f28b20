// Package proc runs one agent process for agentrun: in its own process
// group, with its output bounded (the first bytes of standard output, the
// last of standard error, lines for a streaming parser), an optional
// conversation over its standard input and output, and the group ended
// when the run is over or its context ends. It also records agents'
// process groups so that a later knotd can end what a killed one left
// running (EndOrphans).
package proc
