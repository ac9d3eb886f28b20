package agentrun

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// What a turn's prompt carries follows the conversation (DESIGN §4.2): a
// turn that continues the conversation which answered the note's previous
// version is given the change since that answer; a turn that starts one
// is given the whole note and the tie-off's newest sections. And a
// conversation past its context limit (max_context) ends: the next turn
// starts a new one and says why.

// The values of Agent.ResumePrompt.
const (
	// ResumeChange gives a continuing turn the change since the last
	// answer (the default).
	ResumeChange = "change"
	// ResumeWhole gives every turn the whole note and the tie-off's
	// newest sections, as a new conversation gets them.
	ResumeWhole = "whole"
)

// ContextLimit is an agent's max_context: a number of tokens, or "none"
// (NoContextLimit). Zero is the preset's default.
type ContextLimit int64

// NoContextLimit is max_context: none, no limit whatever the preset.
const NoContextLimit ContextLimit = -1

// UnmarshalYAML reads a whole number of tokens or "none".
func (c *ContextLimit) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if strings.EqualFold(n.Value, "none") {
			*c = NoContextLimit
			return nil
		}
		if v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 10, 64); err == nil && v >= 0 {
			*c = ContextLimit(v)
			return nil
		}
	}
	found := strconv.Quote(n.Value)
	if n.Kind != yaml.ScalarNode {
		found = "a list or a map"
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: expected max_context to be a number of tokens (160000) or none, found %s", n.Line, found)}}
}

// contextDefaulter is a driver whose CLI runs models of a known context
// size: its max_context when the agent sets none.
type contextDefaulter interface {
	maxContext() int64
}

// reportedWindowShare is the share of the context size an agent reports
// (ACP's usage_update size) that a conversation may fill before the next
// turn starts a new one, in percent: the rest is room for the turn itself.
const reportedWindowShare = 80

// contextLimit returns the agent's context limit in tokens, 0 for none:
// its max_context, else its preset's default, else (an ACP agent) a share
// of the context size it reported, window, when it reported one.
func (a *Agent) contextLimit(d driver, window int64) int64 {
	switch {
	case a.MaxContext > 0:
		return int64(a.MaxContext)
	case a.MaxContext == NoContextLimit:
		return 0
	}
	if cd, ok := d.(contextDefaulter); ok {
		if n := cd.maxContext(); n > 0 {
			return n
		}
	}
	if window > 0 {
		return window * reportedWindowShare / 100
	}
	return 0
}

// freshStart returns why a turn that would continue a conversation starts
// a new one instead ("" when it does not): the conversation's last turn
// filled more of the context than the agent's limit.
func freshStart(req *Request, d driver) string {
	if req.LastContext <= 0 {
		return ""
	}
	lim := req.Agent.contextLimit(d, req.LastContextWindow)
	if lim <= 0 || req.LastContext <= lim {
		return ""
	}
	return fmt.Sprintf("the last one used %s tokens, past max_context %s", thousands(req.LastContext), thousands(lim))
}

// thousands writes n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
