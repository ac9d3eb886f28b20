package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHook: knotd hook claude-pretooluse reads Claude Code's hook input on
// standard input and answers on standard output (package hook decides);
// other arguments are a usage error.
func TestHook(t *testing.T) {
	vault := t.TempDir()
	answers := filepath.Join(t.TempDir(), "answers.json")
	if err := os.WriteFile(answers, []byte(`{"vault":`+strconvQuote(vault)+`}`), 0o600); err != nil {
		t.Fatal(err)
	}
	in := `{"session_id":"s","cwd":` + strconvQuote(vault) + `,"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"a.md","content":"x"},"tool_use_id":"t"}`
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		want     string // the permissionDecision, "" for no output
	}{
		{"write deferred", []string{"hook", "claude-pretooluse", answers}, in, exitOK, "defer"},
		{"read passes", []string{"hook", "claude-pretooluse", answers}, strings.Replace(in, `"Write"`, `"Read"`, 1), exitOK, ""},
		{"outside denied", []string{"hook", "claude-pretooluse", answers}, strings.Replace(in, `"a.md"`, `"/elsewhere/a.md"`, 1), exitOK, "deny"},
		{"no subcommand", []string{"hook"}, in, exitUsage, ""},
		{"unknown subcommand", []string{"hook", "codex", answers}, in, exitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tt.args, strings.NewReader(tt.stdin), &out, &errOut)
			if code := exitCode(err); code != tt.wantCode {
				t.Fatalf("knotd %q: exit %d (%v); want %d", tt.args, code, err, tt.wantCode)
			}
			if tt.wantCode != exitOK {
				if !strings.Contains(err.Error(), "claude-pretooluse ANSWERS_FILE") {
					t.Errorf("error %q; want the usage", err)
				}
				return
			}
			if tt.want == "" {
				if out.Len() != 0 {
					t.Errorf("output %q; want none", out.String())
				}
				return
			}
			var got struct{ HookSpecificOutput map[string]string }
			if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.HookSpecificOutput["permissionDecision"] != tt.want {
				t.Errorf("output %q (%v); want %s", out.String(), err, tt.want)
			}
		})
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
