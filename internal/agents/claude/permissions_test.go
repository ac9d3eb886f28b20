package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agents/claude/hook"
	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/question"
)

// TestDriver_Ask: at permissions ask the argv has knotd's hook in
// --settings (exec form, with the attempt's answers file), and Prepare
// writes that file (0600) with the vault and the answers; without a state
// directory the attempt cannot be made.
func TestDriver_Ask(t *testing.T) {
	state, vault := t.TempDir(), t.TempDir()
	ans := []question.Answer{{ID: "3f9a2c1b", CallHash: strings.Repeat("a", 64), Verdict: question.Approve, From: question.FromNote}}
	a := &kit.Attempt{Program: []string{"claude"}, Session: "s1", StrandSession: "s1", Permissions: kit.PermAsk, StateDir: state,
		Vault: vault, Answers: ans, Hook: []string{"/opt/knot d/knotd", "hook"}}
	argv, err := Driver{}.Argv(a)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(argv, "--settings")
	if i < 0 || !slices.Equal(argv[5:i], []string{"--setting-sources", "user", "--permission-mode", "default"}) {
		t.Fatalf("argv %q; want --setting-sources user --permission-mode default --settings", argv)
	}
	var s struct {
		Hooks struct {
			PreToolUse []struct {
				Matcher string
				Hooks   []struct {
					Type, Command string
					Args          []string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(argv[i+1]), &s); err != nil || len(s.Hooks.PreToolUse) != 1 || len(s.Hooks.PreToolUse[0].Hooks) != 1 {
		t.Fatalf("--settings %s: %v; want one PreToolUse hook", argv[i+1], err)
	}
	h := s.Hooks.PreToolUse[0]
	if h.Matcher != "*" || h.Hooks[0].Type != "command" || h.Hooks[0].Command != "/opt/knot d/knotd" ||
		len(h.Hooks[0].Args) != 3 || !slices.Equal(h.Hooks[0].Args[:2], []string{"hook", "claude-pretooluse"}) {
		t.Fatalf("hook %+v; want knotd hook claude-pretooluse FILE for every tool", h)
	}
	file := h.Hooks[0].Args[2]
	if !strings.HasPrefix(file, filepath.Join(state, "claude-ask")+string(filepath.Separator)) {
		t.Errorf("answers file %s; want it in the state directory", file)
	}
	if err := (Driver{}).Prepare(a); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("answers file %v, %v; want 0600", fi, err)
	}
	b, _ := os.ReadFile(file)
	var got hook.Answers
	if err := json.Unmarshal(b, &got); err != nil || got.Vault != vault || len(got.Answers) != 1 || got.Answers[0].ID != "3f9a2c1b" {
		t.Errorf("answers file %s (%v); want the vault and the answer", b, err)
	}

	// Another conversation (another note) has a file of its own.
	other := *a
	other.StrandSession = "s2"
	argv2, _ := Driver{}.Argv(&other)
	if argv2[i+1] == argv[i+1] {
		t.Errorf("two notes share the answers file %s", file)
	}
	// Other levels write nothing.
	ro := *a
	ro.Permissions, ro.StateDir = kit.PermEdit, t.TempDir()
	if err := (Driver{}).Prepare(&ro); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(ro.StateDir); len(entries) != 0 {
		t.Errorf("Prepare at edit wrote %v", entries)
	}
	// Without a state directory.
	none := *a
	none.StateDir = ""
	if _, err := (Driver{}).Argv(&none); err == nil || !strings.Contains(err.Error(), "state directory") {
		t.Errorf("Argv without a state directory = %v; want an error saying so", err)
	}
	if err := (Driver{}).Prepare(&none); err == nil {
		t.Errorf("Prepare without a state directory = nil; want an error")
	}
}
