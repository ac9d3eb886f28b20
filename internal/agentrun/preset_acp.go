package agentrun

import (
	"github.com/knotd/knotd/internal/agents"
	"github.com/knotd/knotd/internal/agents/kit"
)

// acpPresets maps the ACP presets' names to them: each is a kit.ACPPreset
// in its folder under agents/ (agents/claudeacp, agents/codexacp,
// agents/gemini, agents/opencode) that the registry lists, and the one
// ACP driver (acpDriver) runs them all. Each agent answers session/resume
// (and session/load) of a session it does not have with an error, which
// the driver takes as the conversation lost, as its preset's SessionLost
// says (see acpadapters_integration_test.go).
var acpPresets = agents.ACPPresets()

// noPreset is the preset of a protocol: acp command: the driver's generic
// way in everything.
var noPreset = &kit.ACPPreset{}
