package agentrun

import "strings"

// The flags each preset passes for an agent's Permissions, on every turn,
// new or resumed (docs/agents.md#what-an-agent-may-do-on-its-own-permissions says what they let an agent do).

// claudePermissionFlags maps a permission level to Claude Code 2.1.330's
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
//     claudeRootRefusal).
//
// Every level comes with --setting-sources user: Claude Code reads only the
// user's own settings (~/.claude), not the project's .claude/ folder, which
// is in the vault. The vault is shared ground: a settings file synced or
// dropped into it could allow tools (permissions.allow: Write, Bash) that
// the level refuses, or run commands of its own (hooks), and knotd runs no
// command a vault file defines until the user trusts it.
func claudePermissionFlags(p Permissions) []string {
	flags := []string{"--setting-sources", "user", "--permission-mode"}
	switch p {
	case PermEdit:
		return append(flags, "acceptEdits", "--permission-prompts", "none")
	case PermFull:
		return append(flags, "bypassPermissions")
	}
	return append(flags, "dontAsk")
}

// codexPermissionFlags maps a permission level to Codex CLI 0.169.0's
// sandbox flags. codex exec never asks for approval, so a command or patch
// the sandbox does not allow is refused:
//
//   - read-only: -s read-only lets commands read files and nothing else (a
//     write fails with "Read-only file system"; apply_patch is rejected:
//     "writing is blocked by read-only sandbox").
//   - edit: -s workspace-write lets commands and patches write in the
//     working directory (the vault), without network. On its own it also
//     lets them write in /tmp and $TMPDIR; the two
//     sandbox_workspace_write.exclude_* settings take those away, so that
//     edit means the vault only, as for Claude Code.
//   - full: -s danger-full-access runs everything unsandboxed.
func codexPermissionFlags(p Permissions) []string {
	switch p {
	case PermEdit:
		return []string{"-s", "workspace-write",
			"-c", "sandbox_workspace_write.exclude_slash_tmp=true",
			"-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true"}
	case PermFull:
		return []string{"-s", "danger-full-access"}
	}
	return []string{"-s", "read-only"}
}

// failureExplainer is a driver that recognizes failures its CLI reports
// for reasons knotd's configuration can fix, and says what to do.
type failureExplainer interface {
	// explain returns advice for a failed attempt, "" when it has none.
	explain(a *attempt, exitCode int, stderr string) string
}

// claudeRootRefusal is what Claude Code 2.1.330 prints, exiting 1, when it
// is asked to bypass permissions as root: it allows that only with
// IS_SANDBOX=1 (or inside its own bubblewrap sandbox).
const claudeRootRefusal = "cannot be used with root/sudo privileges"

func (claudeDriver) explain(a *attempt, exitCode int, stderr string) string {
	if exitCode == 0 || a.req.Agent.permissions() != PermFull || !strings.Contains(stderr, claudeRootRefusal) {
		return ""
	}
	return "permissions: full runs Claude Code with --permission-mode bypassPermissions, which it refuses as root " +
		"unless IS_SANDBOX=1: run knotd as a user other than root, or, if this machine or container is itself a sandbox, " +
		"set IS_SANDBOX: \"1\" in the agent's env; permissions: edit needs neither"
}
