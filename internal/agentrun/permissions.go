package agentrun

// The flags each preset passes for an agent's Permissions, on every turn,
// new or resumed (docs/agents.md#what-an-agent-may-do-on-its-own-permissions says what they let an agent do).

// failureExplainer is a driver that recognizes failures its CLI reports
// for reasons knotd's configuration can fix, and says what to do.
type failureExplainer interface {
	// explain returns advice for a failed attempt, "" when it has none.
	explain(a *attempt, exitCode int, stderr string) string
}
