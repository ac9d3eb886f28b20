package main

import (
	"strings"
	"testing"
)

// TestConsole_CommandLine: knotd console's usage, and what it refuses
// before serving anything.
func TestConsole_CommandLine(t *testing.T) {
	v, _ := setup(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"console", "--help"}, exitOK, "usage: knotd console [--addr 127.0.0.1:PORT] [--no-open] [VAULT]"},
		{[]string{"console", "--addr", "0.0.0.0:0", v}, exitUsage, "loopback address only"},
		{[]string{"console", "--addr", "localhost:0", v}, exitUsage, "loopback address only"},
		{[]string{"console", "--addr", ":8080", v}, exitUsage, "loopback address only"},
		{[]string{"console", v, v}, exitUsage, "one VAULT at most"},
		{[]string{"console", "--bogus"}, exitUsage, "bogus"},
		{[]string{"console", "--no-open", v}, exitFailed, "knotd never ran on " + v},
	} {
		code, stdout, stderr := knotd(t, tc.args...)
		if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
			t.Errorf("knotd %q: exit %d; want %d and %q in\n%s%s", tc.args, code, tc.code, tc.want, stdout, stderr)
		}
	}
	_, help, _ := knotd(t, "--help")
	if !strings.Contains(help, "knotd console [--addr 127.0.0.1:PORT] [--no-open] [VAULT]") {
		t.Errorf("knotd --help does not list knotd console:\n%s", help)
	}
}
