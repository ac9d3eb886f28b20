// Package opencode is knotd's opencode preset: OpenCode's ACP mode
// (opencode acp), run by the ACP driver.
package opencode

import "github.com/knotd/knotd/internal/agents/kit"

// Preset is OpenCode's ACP mode. It asks before edits, commands and web
// fetches only where its configuration says "ask": OPENCODE_PERMISSION,
// merged over the user's configuration, says so. It writes files through
// knotd's file system (fs/write_text_file). A session it does not have,
// resumed or loaded, fails -32603 "OpenCode service failure".
var Preset = &kit.ACPPreset{
	Program: "opencode",
	Args:    []string{"acp"},
	Env:     [][2]string{{"OPENCODE_PERMISSION", `{"edit":"ask","bash":"ask","webfetch":"ask"}`}},
}
