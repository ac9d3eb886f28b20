package agentrun

import (
	"errors"
	"strings"

	acp "github.com/coder/acp-go-sdk"
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

// The ACP presets. Each agent answers session/resume (and session/load)
// of a session it does not have with an error, which the driver takes as
// the conversation lost: Claude -32002 "Resource not found", Codex -32603
// "no rollout found for thread id", OpenCode -32603 "OpenCode service
// failure" (see acpadapters_integration_test.go).
var (
	// claudeACPPreset is Zed's adapter of Claude Code
	// (@agentclientprotocol/claude-agent-acp). Only the user's own
	// settings apply (settingSources user, as the claude preset's
	// --setting-sources user: the vault's .claude/settings.json is a sync
	// peer's input), and the session's mode is "default", where it asks
	// before edits and commands (its own default, "auto", never asks).
	// Claude Code's prompt suggestions (a model call after each turn for
	// what the user might type next, which nobody reads in knotd) are
	// off.
	claudeACPPreset = &acpPreset{
		program: "claude-agent-acp",
		env:     [][2]string{{"CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", "false"}},
		meta:    map[string]any{"claudeCode": map[string]any{"options": map[string]any{"settingSources": []string{"user"}}}},
		mode:    "default",
	}
	// codexACPPreset is the Codex adapter (@agentclientprotocol/codex-acp).
	// Its mode "read-only" asks before edits and commands. A session whose
	// store is gone resumes, and the prompt then fails "thread not found".
	codexACPPreset = &acpPreset{
		program: "codex-acp",
		mode:    "read-only",
		lostAtPrompt: func(re *acp.RequestError) bool {
			return strings.Contains(acpErrText(re), "thread not found")
		},
	}
	// openCodeACPPreset is OpenCode's ACP mode (opencode acp). It asks
	// before edits, commands and web fetches only where its configuration
	// says "ask": OPENCODE_PERMISSION, merged over the user's
	// configuration, says so. It writes files through knotd's file system
	// (fs/write_text_file).
	openCodeACPPreset = &acpPreset{
		program: "opencode",
		args:    []string{"acp"},
		env:     [][2]string{{"OPENCODE_PERMISSION", `{"edit":"ask","bash":"ask","webfetch":"ask"}`}},
	}
)

// acpPresets maps the ACP presets' names to them.
var acpPresets = map[string]*acpPreset{
	PresetClaudeACP: claudeACPPreset,
	PresetCodexACP:  codexACPPreset,
	PresetOpenCode:  openCodeACPPreset,
}
