package codex

import "testing"

func TestTOMLString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`a "quote" and \ slash`, `"a \"quote\" and \\ slash"`},
		{"two\nlines\tand\r", `"two\nlines\tand\r"`},
		{"bell\x07 del\x7f", `"bell\u0007 del\u007F"`},
		{"ünïcode ✓", `"ünïcode ✓"`},
	}
	for _, tt := range tests {
		if got := tomlString(tt.in); got != tt.want {
			t.Errorf("tomlString(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}
