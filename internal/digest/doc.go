// Package digest is knotd's built-in offline agent, "digest": Of reports
// what a created, edited or deleted note's change means (its outline,
// tasks, links and edited sections) as compact Markdown fit for a tie-off,
// with no model, network or process. Package agentrun runs it in-process
// for agents with preset digest (and for the zero agent). Users read of
// it in docs/agents.md.
package digest
