package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestConsole_CommandLine: knotd console's usage, and what it refuses
// before serving anything.
func TestConsole_CommandLine(t *testing.T) {
	v, _ := setup(t)
	synced, err := filepath.EvalSymlinks(t.TempDir()) // a vault (its .knot came with it) knotd never ran on here
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(synced, ".knot"), 0o755); err != nil {
		t.Fatal(err)
	}
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
		{[]string{"console", "--no-open", v}, exitUsage, v + " is not in a knotd vault"},
		{[]string{"console", "--no-open", synced}, exitFailed, "knotd never ran on " + synced},
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

// TestConsole_OpenPage: the page that hands the address to the browser is
// readable by its owner only, and redirects to the address.
func TestConsole_OpenPage(t *testing.T) {
	const u = "http://127.0.0.1:1234/t/abc/"
	dir, page, err := openPage(u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `content="0;url=`+u+`"`) {
		t.Errorf("the page does not redirect to %s:\n%s", u, b)
	}
	if runtime.GOOS == "windows" {
		return
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, page: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v; want %v", p, got, want)
		}
	}
}
