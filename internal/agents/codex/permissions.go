package codex

import "github.com/knotd/knotd/internal/agents/kit"

// permissionFlags maps a permission level to Codex CLI 0.169.0's
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
func permissionFlags(p kit.Permissions) []string {
	switch p {
	case kit.PermEdit:
		return []string{"-s", "workspace-write",
			"-c", "sandbox_workspace_write.exclude_slash_tmp=true",
			"-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true"}
	case kit.PermFull:
		return []string{"-s", "danger-full-access"}
	}
	return []string{"-s", "read-only"}
}
