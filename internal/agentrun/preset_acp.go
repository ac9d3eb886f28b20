package agentrun

import (
	"errors"

	acp "github.com/coder/acp-go-sdk"
	"github.com/knotd/knotd/internal/agents"
	"github.com/knotd/knotd/internal/agents/kit"
)

// acpPreset is a preset that runs an agent speaking ACP through the
// generic ACP driver (acpDriver): what it adds to a protocol: acp command.
// Its methods take a nil receiver (a command) and then add nothing.
type acpPreset struct {
	// program is the default program; args follow the program (or the
	// agent's command).
	program string
	args    []string
	// env is set over knotd's and the agent's environment.
	env [][2]string
	// meta is the _meta of session/new, session/resume and session/load.
	meta map[string]any
	// mode is set with session/set_mode before the prompt: the agent's
	// mode in which it asks before it edits a file or runs a command
	// (knotd answers by the agent's permissions).
	mode string
	// lostAtPrompt reports that the agent's error answering the prompt of
	// a resumed session means it no longer has the conversation.
	lostAtPrompt func(re *acp.RequestError) bool
}

func (p *acpPreset) sessionMeta() map[string]any {
	if p == nil {
		return nil
	}
	return p.meta
}

func (p *acpPreset) sessionMode() string {
	if p == nil {
		return ""
	}
	return p.mode
}

func (p *acpPreset) promptLost(err error) bool {
	var re *acp.RequestError
	if p == nil || p.lostAtPrompt == nil || !errors.As(err, &re) {
		return false
	}
	return p.lostAtPrompt(re)
}

// acpPresets maps the ACP presets' names to them: each lives in its folder
// under agents/ (agents/claudeacp, agents/codexacp, agents/opencode) and
// the registry lists it. Each agent answers session/resume (and
// session/load) of a session it does not have with an error, which the
// driver takes as the conversation lost (see acpadapters_integration_test.go).
var acpPresets = fromKitACPs(agents.ACPPresets())

// fromKitACPs returns the ACP driver's presets for ps.
func fromKitACPs(ps map[string]*kit.ACPPreset) map[string]*acpPreset {
	out := make(map[string]*acpPreset, len(ps))
	for name, k := range ps {
		p := &acpPreset{program: k.Program, args: k.Args, env: k.Env, meta: k.Meta, mode: k.Mode}
		if lost := k.LostAtPrompt; lost != nil {
			p.lostAtPrompt = func(re *acp.RequestError) bool { return lost(acpErrText(re)) }
		}
		out[name] = p
	}
	return out
}
