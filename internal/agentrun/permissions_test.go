package agentrun

import (
	"strings"
	"testing"
)

func TestClaude_ExplainsRootRefusal(t *testing.T) {
	const refusal = "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons\n"
	tests := []struct {
		name   string
		perm   Permissions
		exit   int
		stderr string
		advice bool
	}{
		{"full refused as root", PermFull, 1, refusal, true},
		{"full, another failure", PermFull, 1, "API Error: 401\n", false},
		{"full, succeeded", PermFull, 0, refusal, false},
		{"edit never bypasses", PermEdit, 1, refusal, false},
		{"read-only never bypasses", "", 1, refusal, false},
	}
	for _, tt := range tests {
		a := &attempt{req: &Request{Agent: Agent{Preset: PresetClaude, Permissions: tt.perm}}}
		got := claudeDriver().explain(a, tt.exit, tt.stderr)
		if tt.advice != (got != "") {
			t.Errorf("%s: explain = %q; want advice %t", tt.name, got, tt.advice)
		}
		for _, want := range []string{"permissions: full", "bypassPermissions", "IS_SANDBOX", "permissions: edit"} {
			if tt.advice && !strings.Contains(got, want) {
				t.Errorf("%s: explain = %q; want it to mention %q", tt.name, got, want)
			}
		}
	}
}
