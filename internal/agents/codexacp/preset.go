// Package codexacp is knotd's codex-acp preset: the Codex adapter
// (@agentclientprotocol/codex-acp), run by the ACP driver.
package codexacp

import (
	"strings"

	"github.com/knotd/knotd/internal/agents/kit"
)

// Preset is the Codex adapter. Its mode "read-only" asks before edits and
// commands. A session it does not have fails session/resume with -32603
// "no rollout found for thread id"; one whose store is gone resumes, and
// the prompt then fails "thread not found".
var Preset = &kit.ACPPreset{
	Program:      "codex-acp",
	Mode:         "read-only",
	LostAtPrompt: func(errText string) bool { return strings.Contains(errText, "thread not found") },
}
