package agentrun

import "testing"

func TestCleanReply(t *testing.T) {
	tests := []struct{ in, want string }{
		{"reply\n", "reply"},
		{"\n  \n\n    code block\nmore\n\n", "    code block\nmore"},
		{"  \t\n", ""},
		{"bad \xff byte", "bad \uFFFD byte"},
	}
	for _, tt := range tests {
		if got := cleanReply(tt.in); got != tt.want {
			t.Errorf("cleanReply(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestFirstLine(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"\n  Error: boom  \nmore", 100, "Error: boom"},
		{"\x1b[31mError:\x1b[0m red\n", 100, "Error: red"},
		{"a\x07b\tc", 100, "a b c"},
		{"0123456789", 4, "0123…"},
		{"", 10, ""},
	}
	for _, tt := range tests {
		if got := firstLine(tt.in, tt.max); got != tt.want {
			t.Errorf("firstLine(%q, %d) = %q; want %q", tt.in, tt.max, got, tt.want)
		}
	}
}
