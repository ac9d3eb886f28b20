package codexacp_test

import (
	"testing"

	"github.com/knotd/knotd/internal/agents/codexacp"
)

func TestPreset_LostAtPrompt(t *testing.T) {
	tests := []struct {
		text string
		lost bool
	}{
		{`Internal error (code -32603): {"message":"thread not found: 019a"}`, true},
		{"Internal error (code -32603)", false},
		{"no rollout found for thread id 019a", false}, // at session/resume, not the prompt
	}
	for _, tt := range tests {
		if got := codexacp.Preset.LostAtPrompt(tt.text); got != tt.lost {
			t.Errorf("LostAtPrompt(%q) = %v; want %v", tt.text, got, tt.lost)
		}
	}
}
