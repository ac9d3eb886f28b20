package textbound

import "testing"

func TestBound(t *testing.T) {
	tests := []struct {
		name string
		fn   func(string, int) string
		in   string
		max  int
		want string
	}{
		{"head fits", Head, "abc\n", 4, "abc\n"},
		{"head at line", Head, "one\ntwo\nthree\n", 9, "one\ntwo\n[… 6 bytes omitted …]\n"},
		{"head mid-rune", Head, "ééééé", 3, "é\n[… 8 bytes omitted …]\n"},
		{"middle", Middle, "1\n2\n3\n4\n5\n6\n7\n8\n", 8, "1\n2\n[… 8 bytes omitted …]\n7\n8\n"},
		{"middle no newlines", Middle, "abcdefghij", 4, "ab\n[… 6 bytes omitted …]\nij"},
	}
	for _, tt := range tests {
		if got := tt.fn(tt.in, tt.max); got != tt.want {
			t.Errorf("%s: bound(%q, %d) = %q; want %q", tt.name, tt.in, tt.max, got, tt.want)
		}
	}
}

func TestFence(t *testing.T) {
	tests := []struct {
		in   []string
		want string
	}{
		{nil, "```"},
		{[]string{"no ticks"}, "```"},
		{[]string{"``", " ```"}, "````"},
		{[]string{"x ````` y", "```"}, "``````"},
	}
	for _, tt := range tests {
		if got := Fence(tt.in...); got != tt.want {
			t.Errorf("fence(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
