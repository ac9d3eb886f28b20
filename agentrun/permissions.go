package agentrun

// The flags each preset passes for an agent's Permissions, on every turn,
// new or resumed (README.md, "Permissions", says what they let an agent do).

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
