package claude

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/knotd/knotd/internal/agents/claude/hook"
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
//   - ask: --permission-mode default --settings S (askFlags): knotd's own
//     PreToolUse hook decides each call (package hook): reads pass, an
//     answered call is allowed or denied, anything else is deferred, and
//     the turn ends with stop_reason tool_deferred for the user's answer.
//
// Every level comes with --setting-sources user: Claude Code reads only the
// user's own settings (~/.claude), not the project's .claude/ folder, which
// is in the vault. The vault is shared ground: a settings file synced or
// dropped into it could allow tools (permissions.allow: Write, Bash) that
// the level refuses, or run commands of its own (hooks), and knotd runs no
// command a vault file defines until the user trusts it.
func permissionFlags(a *kit.Attempt) ([]string, error) {
	flags := []string{"--setting-sources", "user", "--permission-mode"}
	switch a.Permissions {
	case kit.PermAsk:
		ask, err := askFlags(a)
		return append(flags, ask...), err
	case kit.PermEdit:
		return append(flags, "acceptEdits", "--permission-prompts", "none"), nil
	case kit.PermFull:
		return append(flags, "bypassPermissions"), nil
	}
	return append(flags, "dontAsk"), nil
}

// askFlags are the flags of permissions: ask after --permission-mode,
// as Claude Code 2.1.330 takes them (each checked with the real CLI
// against the stand-in, TestClaude_RealCLIAsk):
//
//   - default: the mode in which a call neither a rule nor a hook allows
//     would ask; in -p mode nobody can answer, so such a call is refused.
//     Not bypassPermissions: a call deferred under it can stick (reported),
//     and a hook that fails or answers nothing would let everything run;
//     under default, a hook that fails refuses the call.
//   - --settings S: S is inline JSON adding one PreToolUse hook for every
//     tool (matcher "*"), in exec form (command and args: Claude Code
//     starts it directly, no shell parses the paths): knotd's own
//     `knotd hook claude-pretooluse ANSWERS_FILE` (Attempt.Hook, or this
//     executable's hook), with the answers file Prepare writes. Claude Code
//     merges it with the user's settings (--setting-sources user: never
//     the vault's .claude/, which could add hooks or allow rules of its
//     own).
//
// A deferred call ends the turn (stop_reason tool_deferred, exit 0); the
// run that continues it after the user's answer resumes the session with
// an empty prompt (ResumesHeld), and Claude Code asks the hook again. The
// system prompt of --append-system-prompt is passed on every turn; Claude
// Code keeps the conversation's first one on a resumed turn (its system
// prompt snapshot), deferred or not (TestClaude_RealCLIAsk checks it).
func askFlags(a *kit.Attempt) ([]string, error) {
	program := a.Hook
	if len(program) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("permissions: ask: knotd's own hook: %w", err)
		}
		program = []string{exe, "hook"}
	}
	file, err := answersFile(a)
	if err != nil {
		return nil, err
	}
	args := append(append(append([]string(nil), program[1:]...), "claude-pretooluse"), file)
	settings, err := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
		"matcher": "*",
		"hooks":   []any{map[string]any{"type": "command", "command": program[0], "args": args}},
	}}}})
	if err != nil {
		return nil, fmt.Errorf("permissions: ask: %w", err)
	}
	return []string{"default", "--settings", string(settings)}, nil
}

// answersFile is the file of answers of an attempt at permissions ask, in
// the vault's folder of knotd's state directory: one per conversation
// (the strand's session), so that notes running at once have their own.
func answersFile(a *kit.Attempt) (string, error) {
	if a.StateDir == "" {
		return "", errors.New("permissions: ask needs knotd's state directory for the answers its hook reads (none was given)")
	}
	key := a.StrandSession
	if key == "" {
		key = a.Session
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(a.StateDir, "claude-ask", hex.EncodeToString(sum[:12])+".json"), nil
}

// Prepare implements kit.Preparer: at permissions ask, it writes the
// answers the hook reads (the vault's root and the attempt's Answers),
// 0600, before each attempt.
func (Driver) Prepare(a *kit.Attempt) error {
	if a.Permissions != kit.PermAsk {
		return nil
	}
	file, err := answersFile(a)
	if err != nil {
		return err
	}
	if !filepath.IsAbs(a.Vault) {
		return fmt.Errorf("permissions: ask: the vault's path %q is not absolute", a.Vault)
	}
	return hook.WriteAnswers(file, hook.Answers{Vault: a.Vault, Answers: a.Answers})
}

// ResumesHeld implements kit.HeldResumer: a turn that ended holding a call
// is continued by resuming the session with an empty prompt.
func (Driver) ResumesHeld() bool { return true }

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
