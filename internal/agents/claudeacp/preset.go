// Package claudeacp is knotd's claude-acp preset: Zed's adapter of Claude
// Code (@agentclientprotocol/claude-agent-acp), run by the ACP driver.
package claudeacp

import "github.com/knotd/knotd/internal/agents/kit"

// Preset is Zed's adapter of Claude Code. Only the user's own settings
// apply (settingSources user, as the claude preset's --setting-sources
// user: the vault's .claude/settings.json is a sync peer's input), and the
// session's mode is "default", where it asks before edits and commands
// (its own default, "auto", never asks). Claude Code's prompt suggestions
// (a model call after each turn for what the user might type next, which
// nobody reads in knotd) are off. A session it does not have, resumed or
// loaded, fails -32002 "Resource not found", which the driver takes as the
// conversation lost.
var Preset = &kit.ACPPreset{
	Program: "claude-agent-acp",
	Env:     [][2]string{{"CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION", "false"}},
	Meta:    map[string]any{"claudeCode": map[string]any{"options": map[string]any{"settingSources": []string{"user"}}}},
	Mode:    "default",
}
