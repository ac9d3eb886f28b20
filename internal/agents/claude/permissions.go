package claude

import (
	"strings"

	"github.com/knotd/knotd/internal/agents/kit"
)

// permissionFlags maps a permission level to Claude Code 2.1.330's
// flags. In -p mode nobody can answer a permission prompt:
//
//   - read-only: --permission-mode dontAsk denies every tool use that is not
//     pre-approved, without asking: reading files and read-only commands
//     (cat, ls, grep…) in the working directory run; Write, Edit and other
//     commands are refused ("Permission to use Write has been denied
//     because Claude Code is running in don't ask mode").
//   - edit: --permission-mode acceptEdits accepts file edits in the working
//     directory (the vault), and the commands that only create or change
//     files there (touch, mkdir, a shell redirection); anything else would
//     ask, and --permission-prompts none makes such a request denied at
//     once, telling the model nobody can approve it.
//   - full: --permission-mode bypassPermissions: any tool, any command.
//     Claude Code refuses it for root outside a sandbox it recognizes (see
//     rootRefusal).
//
// Every level comes with --setting-sources user: Claude Code reads only the
// user's own settings (~/.claude), not the project's .claude/ folder, which
// is in the vault. The vault is shared ground: a settings file synced or
// dropped into it could allow tools (permissions.allow: Write, Bash) that
// the level refuses, or run commands of its own (hooks), and knotd runs no
// command a vault file defines until the user trusts it.
func permissionFlags(p kit.Permissions) []string {
	flags := []string{"--setting-sources", "user", "--permission-mode"}
	switch p {
	case kit.PermEdit:
		return append(flags, "acceptEdits", "--permission-prompts", "none")
	case kit.PermFull:
		return append(flags, "bypassPermissions")
	}
	return append(flags, "dontAsk")
}

// rootRefusal is what Claude Code 2.1.330 prints, exiting 1, when it
// is asked to bypass permissions as root: it allows that only with
// IS_SANDBOX=1 (or inside its own bubblewrap sandbox).
const rootRefusal = "cannot be used with root/sudo privileges"

// Explain implements kit.FailureExplainer: a refusal to bypass
// permissions as root.
func (Driver) Explain(a *kit.Attempt, exitCode int, stderr string) string {
	if exitCode == 0 || a.Permissions != kit.PermFull || !strings.Contains(stderr, rootRefusal) {
		return ""
	}
	return "permissions: full runs Claude Code with --permission-mode bypassPermissions, which it refuses as root " +
		"unless IS_SANDBOX=1: run knotd as a user other than root, or, if this machine or container is itself a sandbox, " +
		"set IS_SANDBOX: \"1\" in the agent's env; permissions: edit needs neither"
}
